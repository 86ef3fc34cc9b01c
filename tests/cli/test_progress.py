"""Long commands show their progress on a terminal: a line per step on stderr with
what is left, and nothing when stderr is a pipe or a file (stdout, the command's
answer, is the same either way). ``recap db upgrade`` and ``recap eval`` run with
their stderr on a pseudo-terminal; ``recap ingest`` and ``recap resummarize`` run
in this process with a stderr that says it is a terminal."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from recap.cli import ingest as ingest_cli
from recap.cli import main
from recap.cli.base import Progress
from recap.migrate import head_revisions
from recap.testing import FakeAnthropic
from tests.cli.common import run_inline
from tests.env import TEST_ENV
from tests.helpers import LOW, run_on_terminal, seed, sentence

RECAP = str(Path(sys.executable).with_name("recap"))
MIGRATIONS = len(list((Path(__file__).parents[2] / "recap" / "migrations" / "versions")
                      .glob("0*.py")))


class Terminal(io.StringIO):
    """A stderr that says it is a terminal, as Progress asks."""

    def isatty(self) -> bool:
        return True


def on_terminal(monkeypatch: pytest.MonkeyPatch) -> Terminal:
    """sys.stderr as a terminal, for the rest of the test. Called in the test's body:
    pytest puts its own capture back on sys.stderr before the body runs."""
    stderr = Terminal()
    monkeypatch.setattr(sys, "stderr", stderr)
    return stderr


def lines(text: str, command: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith(f"recap {command}: ")]


def test_a_step_says_what_is_left_and_only_on_a_terminal() -> None:
    shown = Terminal()
    Progress("x", stream=shown).step(3, 20, "migrations", "0002 -> 0003, a change")
    Progress("x", stream=shown).step(4000, None, "lines", "added 3990, bad 10")
    assert shown.getvalue().splitlines() == [
        "recap x: 3/20 migrations (17 left): 0002 -> 0003, a change",
        "recap x: 4000 lines: added 3990, bad 10"]
    piped = io.StringIO()
    Progress("x", stream=piped).step(3, 20, "migrations")
    assert piped.getvalue() == ""


def test_db_upgrade_shows_one_line_per_migration_on_a_terminal(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'on-a-tty.sqlite3'}"}
    code, out, err = run_on_terminal([RECAP, "db", "upgrade"], env=env, cwd=tmp_path)
    assert code == 0, err
    shown = lines(err, "db upgrade")
    assert len(shown) == MIGRATIONS, err
    assert shown[0].startswith(f"recap db upgrade: 1/{MIGRATIONS} migrations "
                               f"({MIGRATIONS - 1} left): empty -> 0001, initial schema")
    assert re.fullmatch(rf"recap db upgrade: {MIGRATIONS}/{MIGRATIONS} migrations \(0 left\): "
                        rf".* -> {head_revisions()[0]}, .*", shown[-1]), shown[-1]
    assert f"upgraded from no revision (empty) to {head_revisions()[0]}" in out
    # The same command into a pipe: the answer, no progress.
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'piped.sqlite3'}"
    done = subprocess.run([RECAP, "db", "upgrade"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "upgraded from no revision (empty)" in done.stdout


def test_ingest_shows_a_line_per_tenth_of_a_file_on_a_terminal_only(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = on_terminal(monkeypatch)
    path = tmp_path / "chat.jsonl"
    rows = [{"session_id": "ingested", "role": "user" if i % 2 == 0 else "assistant",
             "content": sentence(i, 5)} for i in range(20)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert main(["ingest", str(path)]) == 0
    shown = lines(terminal.getvalue(), "ingest")
    assert shown[0] == "recap ingest: 2/20 lines (18 left): added 2, bad 0"
    assert shown[-1] == "recap ingest: 20/20 lines (0 left): added 20, bad 0"
    assert len(shown) == 10
    assert capsys.readouterr().out.startswith("added 20, bad 0")
    # A stream of unknown length (a pipe): every STREAM_STEP lines, with no total.
    monkeypatch.setattr(ingest_cli, "STREAM_STEP", 8)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    assert main(["ingest"]) == 0
    assert lines(terminal.getvalue(), "ingest")[10:] == [
        "recap ingest: 8 lines: added 8, bad 0", "recap ingest: 16 lines: added 16, bad 0"]


def test_ingest_into_a_pipe_shows_no_progress(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"session_id": "piped", "role": "user", "content": "hi"}) + "\n",
                    encoding="utf-8")
    assert main(["ingest", str(path)]) == 0
    assert capsys.readouterr().err == ""


def test_resummarize_shows_each_chunk_folded(
        fake_api: FakeAnthropic, settings_env: Callable[..., None],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Long messages and a small input limit: the archive is folded in several calls.
    settings_env(**LOW, RECAP_ARCHIVE_SUMMARIZED="true", RECAP_LLM_MAX_INPUT_TOKENS=2000,
                 RECAP_MAX_SUMMARY_TOKENS=400,
                 RECAP_RETENTION_GUARD="false")
    seed("chunked", 12, words=300)
    assert run_inline("chunked").status == "applied"
    terminal = on_terminal(monkeypatch)
    assert main(["resummarize", "chunked"]) == 0
    shown = lines(terminal.getvalue(), "resummarize")
    assert len(shown) >= 2, terminal.getvalue()
    total = len(shown)
    assert shown == [f"recap resummarize: {i}/{total} chunks folded ({total - i} left)"
                     for i in range(1, total + 1)]


def test_eval_against_a_slow_model_shows_its_progress_on_a_terminal(tmp_path: Path) -> None:
    server = FakeAnthropic().start()
    server.delay = 0.05  # a slow model: every answer waits
    argv = [RECAP, "eval", "--base-url", server.url, "--model", "local-model", "--messages",
            "80", "--facts", "4", "--no-peers"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "TIKTOKEN_CACHE_DIR": TEST_ENV["TIKTOKEN_CACHE_DIR"]}
    try:
        code, out, err = run_on_terminal(argv, env=env, cwd=tmp_path)
        piped = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True,
                               timeout=240)
    finally:
        server.stop()
    assert code == 0, err[-3000:]
    shown = lines(err, "eval")
    folds = [ln for ln in shown if " messages through Recap " in ln]
    assert folds and all(re.fullmatch(r"recap eval: (\d+)/80 messages through Recap \((\d+) "
                                      r"left\)", ln) for ln in folds), shown
    assert any(re.fullmatch(r"recap eval: \d+/\d+ chunks folded \(\d+ left\)", ln)
               for ln in shown), shown
    assert piped.returncode == 0 and lines(piped.stderr, "eval") == []
    assert out.splitlines()[:2] == piped.stdout.splitlines()[:2]
