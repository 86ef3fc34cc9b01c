"""`recap demo` runs the real pipeline with no services and no configuration.

Each test runs the command as a subprocess in a clean environment (only PATH,
HOME and TIKTOKEN_CACHE_DIR): no DATABASE_URL, no broker, no API key.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.env import API_KEY, FAKE, TEST_ENV
from worker.demo.run import OFFLINE_LABEL
from worker.llm.summarizer import OFFLINE_MODEL
from worker.settings import DEFAULT_MODEL

LABEL = OFFLINE_LABEL.strip()


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
             "HOME": os.environ.get("HOME", str(cwd)),
             "TIKTOKEN_CACHE_DIR": TEST_ENV["TIKTOKEN_CACHE_DIR"], **env}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=clean, capture_output=True,
                          text=True, timeout=240)


def db_state(path: Path) -> tuple[dict[str, int], list[tuple[str, int, str | None]]]:
    engine = create_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        session = conn.execute(text(
            "SELECT message_count, summarized_message_count, summary_version FROM chat_sessions"
        )).mappings().one()
        runs = conn.execute(text("SELECT status, messages_condensed, model FROM summary_runs "
                                 "ORDER BY id")).all()
    engine.dispose()
    return dict(session), [tuple(r) for r in runs]  # type: ignore[misc]


def test_demo_runs_offline_with_no_configuration(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite3"
    result = run(["-m", "worker.cli", "demo", "--db", str(db)], tmp_path)

    assert result.returncode == 0, result.stderr[-3000:]
    out, err = result.stdout.splitlines(), result.stderr.splitlines()
    # Every line says the summaries are not Claude's, on stdout and on stderr.
    assert out and all(line.startswith(LABEL) for line in out), result.stdout[:2000]
    assert err and all(line.startswith(LABEL) for line in err), result.stderr[:2000]
    assert re.search(r"applied: condensed \d+ messages", result.stdout)
    assert "a summary was applied" in result.stdout
    assert "<SUMMARY_OF_PRIOR_CONTEXT>" in result.stdout  # the assembled context is shown
    assert any("fed 80/80 messages" in line for line in err)

    # The worker really ran the pipeline: the audit rows and counters agree.
    assert (tmp_path / "demo-broker.sqlite3").is_file()
    session, runs = db_state(db)
    applied = [r for r in runs if r[0] == "applied"]
    assert applied and all(model == OFFLINE_MODEL for _, _, model in applied)
    condensed = sum(n for _, n, _ in applied)
    assert session["summarized_message_count"] == condensed
    assert session["message_count"] + condensed == 80
    assert session["summary_version"] == len(applied)
    assert {status for status, _, _ in runs} <= {"applied", "skipped"}


def test_demo_module_defaults_to_a_temporary_directory(tmp_path: Path) -> None:
    cwd, temp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    temp.mkdir()
    result = run(["-m", "worker.demo", "--messages", "6"], cwd, TMPDIR=str(temp))

    assert result.returncode == 0, result.stderr[-3000:]
    assert "no summary was applied" in result.stdout
    match = re.search(r"recap demo: data (\S+)", result.stdout)
    assert match, result.stdout
    data = Path(match.group(1))
    assert data.is_file() and data.parent.parent == temp  # says where, and it is there
    assert list(cwd.iterdir()) == []  # nothing written where it was started
    session, runs = db_state(data)
    assert (session["message_count"], runs) == (6, [])


def test_demo_uses_claude_when_a_key_is_set(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite3"
    result = run(["-m", "worker.cli", "demo", "--db", str(db)], tmp_path,
                 ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL=FAKE.url)

    assert result.returncode == 0, result.stderr[-3000:]
    assert LABEL not in result.stdout + result.stderr
    assert f"summarizer: {DEFAULT_MODEL} (Claude)" in result.stdout
    _, runs = db_state(db)
    applied = [r for r in runs if r[0] == "applied"]
    assert applied and all(model == DEFAULT_MODEL for _, _, model in applied)
    assert len(FAKE.requests) >= len(applied)


@pytest.mark.parametrize("entry", [["-m", "worker.cli", "demo"], ["-m", "worker.demo"]])
def test_demo_refuses_offline_in_production(tmp_path: Path, entry: list[str]) -> None:
    # The URLs only get past the import-time check; the demo uses its own files.
    result = run([*entry, "--db", str(tmp_path / "demo.sqlite3")], tmp_path,
                 RECAP_ENV="production", DATABASE_URL="sqlite:///elsewhere.sqlite3",
                 CELERY_BROKER_URL="sqla+sqlite:///elsewhere-broker.sqlite3")

    assert result.returncode == 1
    assert "offline extractive summarizer is not Claude" in result.stderr
    assert "Traceback" not in result.stderr


def test_db_option_names_the_data_file_or_its_directory(tmp_path: Path) -> None:
    from worker.demo.run import file_paths
    from worker.errors import ConfigError

    assert file_paths(str(tmp_path / "x.db")) == (tmp_path / "x.db", tmp_path / "x-broker.db")
    assert file_paths(str(tmp_path)) == (tmp_path / "recap.sqlite3",
                                         tmp_path / "recap-broker.sqlite3")
    with pytest.raises(ConfigError, match="does not exist"):
        file_paths(str(tmp_path / "missing" / "x.db"))
