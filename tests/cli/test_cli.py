"""The ``recap`` command line, run in-process with ``main([...])`` against the test
PostgreSQL database, the fake Messages API and (where jobs are queued) a real
in-process Celery worker; one test runs the installed console script.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from recap import db
from recap.cli import parse_line
from recap.errors import InvalidInput
from recap.models import ChatMessage
from recap.ops import stats
from tests.cli.common import run
from tests.env import ROOT
from tests.helpers import message_ids, statuses, wait_for

# -- parsing and usage ----------------------------------------------------------

def recap_script() -> str:
    """The installed ``recap`` console script: next to this Python, else on PATH."""
    beside = Path(sys.executable).parent / "recap"
    found = str(beside) if beside.is_file() else shutil.which("recap")
    if found is None:
        pytest.fail(f"the recap console script is not installed: neither {beside} nor on "
                    "PATH (install the project into this environment: pip install -e .)")
    return found


@pytest.mark.unit
def test_help_runs_as_a_real_command_without_touching_the_database() -> None:
    # An unreachable database proves --help neither connects nor migrates.
    env = {**os.environ, "DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:1/none"}
    for argv in (["--help"], ["stats", "--help"], ["sweep", "--help"]):
        done = subprocess.run([recap_script(), *argv], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "usage: recap" in done.stdout
    assert "retry" in done.stdout or "--all" in done.stdout


@pytest.mark.unit
def test_building_the_parser_imports_no_command_dependencies() -> None:
    # What `recap --help` costs: the command modules, none of what they run.
    script = ("import sys, recap.cli; recap.cli.build_parser(); "
              "print('\\n'.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True)
    heavy = {"sqlalchemy", "celery", "kombu", "anthropic", "pydantic", "tiktoken", "models"}
    loaded = [m for m in done.stdout.split() if m.split(".")[0] in heavy
              or (m.startswith("worker.") and not m.startswith("recap.cli"))]
    assert loaded == []


@pytest.mark.unit
@pytest.mark.parametrize("argv", [[], ["nope"], ["retry"], ["retry", "s", "--all-dead"],
                                  ["failures", "--limit", "0"], ["sweep", "--batch", "x"]])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert "usage: recap" in err


@pytest.mark.unit
@pytest.mark.parametrize("line, problem", [
    ("{not json", "invalid JSON"),
    ("[1, 2]", "expected a JSON object, got list"),
    ('{"session_id": "s", "role": "user"}', "missing field content"),
    ('{"session_id": "s", "role": "user", "content": "x", "pined": true}',
     "unknown field pined"),
])
def test_parse_line_names_the_problem(line: str, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        parse_line(line)


@pytest.mark.unit
def test_parse_line_defaults_pinned_to_false() -> None:
    assert parse_line('{"session_id": "s", "role": "user", "content": "hi"}') == \
        ("s", "user", "hi", False)


@pytest.mark.unit
@pytest.mark.parametrize("p, n, index", [(50, 1, 0), (50, 2, 0), (50, 4, 1), (95, 20, 18),
                                         (95, 21, 19), (100, 7, 6), (1, 100, 0)])
def test_nearest_rank(p: float, n: int, index: int) -> None:
    assert stats.nearest_rank(p, n) == index


# -- ingest -----------------------------------------------------------------------

def _line(session_id: str, role: str, content: str, **extra: Any) -> str:
    return json.dumps({"session_id": session_id, "role": role, "content": content, **extra})


def test_ingest_adds_good_lines_in_order_reports_bad_ones_and_queues(
        low: None, worker_idle: None, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    good = [_line("mig", "user" if i % 2 == 0 else "assistant", f"turn {i} " + "words " * 30,
                  pinned=(i == 0)) for i in range(12)]
    lines = good[:3] + ["{broken", "", _line("mig", "robot", "hi"),
                        '{"session_id": "mig"}'] + good[3:]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    code, out, err = run(capsys, "ingest", str(path))

    assert code == 1  # a line was rejected: the valid ones are stored all the same
    assert "added 12, bad 3, summarize jobs queued 1, title jobs queued 0\n" in out
    assert "line 4: invalid JSON" in err
    assert "line 6: unknown role 'robot'" in err
    assert "line 7: missing field role, content" in err
    wait_for(lambda: "applied" in statuses("mig"), what="the queued job to apply")
    with db.transaction() as s:
        contents = list(s.scalars(select(ChatMessage.content).order_by(ChatMessage.id)))
        pinned = s.scalar(select(ChatMessage.pinned).where(ChatMessage.content.like("turn 0 %")))
    # The pinned first turn survives the summary; the rest kept their order.
    assert pinned is True
    assert [int(c.split()[1]) for c in contents] == sorted(int(c.split()[1]) for c in contents)


def test_ingest_strict_stops_at_the_first_bad_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join([_line("s", "user", "one"), _line("s", "user", ""),
                               _line("s", "user", "three")]), encoding="utf-8")
    code, out, err = run(capsys, "ingest", "--strict", str(path))
    assert code == 1
    assert "line 2: content is empty" in err
    assert "stopped at line 2 (--strict)" in err
    assert out == "added 1, bad 1, summarize jobs queued 0, title jobs queued 0\n"
    assert len(message_ids("s")) == 1


def test_ingest_reads_stdin_and_survives_broken_utf8(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    data = (_line("in", "user", "hello") + "\n").encode() + \
        b'{"session_id": "in", "role": "user", "content": "bad \xff byte"}\n'
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, err = run(capsys, "ingest", "-")
    assert code == 1
    assert "added 1, bad 1, summarize jobs queued 0, title jobs queued 0" in out
    assert "line 2: content is not valid text" in err


def test_ingest_missing_file_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "ingest", "/nonexistent/in.jsonl")
    assert code == 1
    assert err.startswith("recap: error: cannot read /nonexistent/in.jsonl")


def test_recap_bench_reads_its_options_in_any_order() -> None:
    from recap.cli import build_parser, parse_args

    parser = build_parser()
    # `recap bench --quick` (docs/benchmarks/) is read by the real parser.
    for argv, only, quick in ((["--quick"], [], True),
                              (["--quick", "--only", "overhead,tokens"], ["overhead", "tokens"],
                               True), (["--only", "hook"], ["hook"], False), ([], [], False)):
        args = parse_args(parser, ["bench", *argv])
        assert (args.command, args.only, args.quick) == ("bench", only, quick)
