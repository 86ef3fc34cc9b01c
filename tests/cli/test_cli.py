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
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, update

from models import ChatMessage, ChatSession
from tests.env import API_KEY, FAKE, ROOT, migrate
from tests.fake_anthropic import error
from tests.helpers import LOW, message_ids, runs, seed, session_row, statuses, wait_for
from worker import db
from worker.cli import main, parse_line
from worker.db import utcnow
from worker.errors import InvalidInput, PermanentLLMError
from worker.jobs import ops
from worker.jobs.outcome import Job, Outcome
from worker.jobs.resources import get_resources
from worker.jobs.summarize import summarize


@pytest.fixture
def low(settings_env: Callable[..., None]) -> None:
    """Small thresholds: 12 seeded messages trigger exactly one 5-message batch."""
    settings_env(**LOW)


def run_inline(session_id: str) -> Outcome:
    return summarize(session_id, job=Job(task_id="t-cli"), res=get_resources())


def make_dead(session_id: str, *, n: int = 12) -> None:
    """A session whose last run is dead: a 401 whose message even carries the key."""
    seed(session_id, n)
    FAKE.always(error(401, f"invalid x-api-key {API_KEY}"))
    with pytest.raises(PermanentLLMError):
        run_inline(session_id)
    FAKE.always(None)
    assert statuses(session_id)[-1] == "dead"


def idle() -> bool:
    """No queued or running job anywhere (so no job outlives its test)."""
    with db.transaction() as s:
        busy = s.scalar(select(func.count()).select_from(ChatSession).where(
            ChatSession.enqueued_at.isnot(None) | ChatSession.lease_token.isnot(None)))
    return busy == 0


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- parsing and usage ----------------------------------------------------------

def recap_script() -> str:
    """The installed ``recap`` console script: next to this Python, else on PATH."""
    beside = Path(sys.executable).parent / "recap"
    found = str(beside) if beside.is_file() else shutil.which("recap")
    if found is None:
        pytest.fail(f"the recap console script is not installed: neither {beside} nor on "
                    "PATH (install the project into this environment: pip install -e .)")
    return found


def test_help_runs_as_a_real_command_without_touching_the_database() -> None:
    # An unreachable database proves --help neither connects nor migrates.
    env = {**os.environ, "DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:1/none"}
    for argv in (["--help"], ["stats", "--help"], ["sweep", "--help"]):
        done = subprocess.run([recap_script(), *argv], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "usage: recap" in done.stdout
    assert "retry" in done.stdout or "--all" in done.stdout


def test_building_the_parser_imports_no_command_dependencies() -> None:
    # What `recap --help` costs: the command modules, none of what they run.
    script = ("import sys, worker.cli; worker.cli.build_parser(); "
              "print('\\n'.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True)
    heavy = {"sqlalchemy", "celery", "kombu", "anthropic", "pydantic", "tiktoken", "models"}
    loaded = [m for m in done.stdout.split() if m.split(".")[0] in heavy
              or (m.startswith("worker.") and not m.startswith("worker.cli"))]
    assert loaded == []


@pytest.mark.parametrize("argv", [[], ["nope"], ["retry"], ["retry", "s", "--all-dead"],
                                  ["failures", "--limit", "0"], ["sweep", "--batch", "x"]])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert "usage: recap" in err


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


def test_parse_line_defaults_pinned_to_false() -> None:
    assert parse_line('{"session_id": "s", "role": "user", "content": "hi"}') == \
        ("s", "user", "hi", False)


@pytest.mark.parametrize("p, n, index", [(50, 1, 0), (50, 2, 0), (50, 4, 1), (95, 20, 18),
                                         (95, 21, 19), (100, 7, 6), (1, 100, 0)])
def test_nearest_rank(p: float, n: int, index: int) -> None:
    assert ops.nearest_rank(p, n) == index


# -- ingest -----------------------------------------------------------------------

def _line(session_id: str, role: str, content: str, **extra: Any) -> str:
    return json.dumps({"session_id": session_id, "role": role, "content": content, **extra})


@pytest.fixture
def worker_idle(celery_worker_thread: object) -> Iterator[None]:
    """The in-process worker runs queued jobs; the test ends only once they are done."""
    yield
    wait_for(idle, what="every queued job to finish")


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

    assert code == 0
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
    assert code == 0
    assert "added 1, bad 1, summarize jobs queued 0, title jobs queued 0" in out
    assert "line 2: content is not valid text" in err


def test_ingest_missing_file_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "ingest", "/nonexistent/in.jsonl")
    assert code == 1
    assert err.startswith("recap: error: cannot read /nonexistent/in.jsonl")


# -- stats and failures --------------------------------------------------------------

def _stats(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = run(capsys, "stats", "--json")
    assert code == 0, err
    return dict(json.loads(out))


def _scenario() -> None:
    """'busy': two applied runs; 'broken': one dead run; 'quiet': below thresholds."""
    seed("busy", 12)
    assert run_inline("busy").status == "applied"
    seed("busy", 6)  # 13 active again: one more batch
    assert run_inline("busy").status == "applied"
    make_dead("broken")
    seed("quiet", 3)


def _check_stats(data: dict[str, Any]) -> None:
    applied = [r for r in runs() if r.status == "applied"]
    latencies = sorted(r.latency_ms for r in applied if r.latency_ms is not None)
    with db.transaction() as s:
        active_tokens = s.scalar(select(func.sum(ChatMessage.token_count)))
        active = s.scalar(select(func.count()).select_from(ChatMessage))
    assert data["sessions"] == 3
    assert data["active_messages"] == active == 8 + 12 + 3
    assert data["active_tokens"] == active_tokens
    assert data["summaries_applied"] == 2
    assert data["messages_condensed"] == 10
    assert data["dead_runs"] == 1 and data["failed_runs"] == 0
    assert data["runs_by_status"] == {"applied": 2, "dead": 1}
    assert data["latency_p50_ms"] == latencies[0]  # nearest rank of 2 values
    assert data["latency_p95_ms"] == latencies[1]
    assert data["api_input_tokens"] == sum(r.input_tokens or 0 for r in applied) > 0
    assert data["api_output_tokens"] == sum(r.output_tokens or 0 for r in applied) > 0
    assert data["sessions_blocked"] == 1  # the dead one, cooling down
    assert data["sessions_leased"] == 0 and data["sessions_pending"] == 0
    assert data["sessions_needing_escalation"] == 0
    with db.transaction() as s:
        summaries = s.scalar(select(func.sum(ChatSession.summary_tokens)))
    assert data["tokens_saved"] == sum(r.condensed_tokens or 0 for r in applied) - (summaries or 0)


def test_stats_counts_sessions_runs_latency_and_usage(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    _scenario()
    _check_stats(_stats(capsys))
    code, out, _ = run(capsys, "stats")
    assert code == 0
    assert "summaries applied" in out and "runs by status" in out
    assert "context tokens saved (est.)" in out


def test_stats_live_lease_and_pending_marker(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    seed("held", 2)
    seed("queued", 2)
    now = utcnow()
    with db.transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "held").values(
            lease_token="t", lease_expires_at=now + timedelta(minutes=5)))
        s.execute(update(ChatSession).where(ChatSession.id == "queued").values(enqueued_at=now))
    data = _stats(capsys)
    assert (data["sessions_leased"], data["sessions_pending"]) == (1, 1)
    assert data["latency_p50_ms"] is None  # no applied run yet
    with db.transaction() as s:  # no job exists for these markers: leave nothing behind
        s.execute(update(ChatSession).values(lease_token=None, lease_expires_at=None,
                                             enqueued_at=None))


def test_stats_on_sqlite_matches(tmp_path: Path, settings_env: Callable[..., None],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'recap.sqlite3'}"
    migrate(url)
    db.reset_engines()
    settings_env(DATABASE_URL=url, **LOW)
    try:
        _scenario()
        _check_stats(_stats(capsys))
    finally:
        db.reset_engines()


def test_stats_with_a_bad_setting_exits_1_naming_it(
        settings_env: Callable[..., None], capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(RECAP_BATCH_SIZE="abc")
    code, out, err = run(capsys, "stats")
    assert code == 1
    assert err.startswith("recap: error: invalid configuration: RECAP_BATCH_SIZE")
    assert "Traceback" not in err and out == ""


def test_failures_lists_the_401_without_the_api_key(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    seed("fine", 12)
    run_inline("fine")
    make_dead("broken")
    code, out, err = run(capsys, "failures")
    assert code == 0, err
    assert "dead" in out and "session=broken" in out and "task=t-cli" in out
    assert "PermanentLLMError: AuthenticationError 401" in out
    assert "fine" not in out
    assert API_KEY not in out + err
    code, out, _ = run(capsys, "failures", "--json", "--limit", "1")
    items = json.loads(out)
    assert [i["status"] for i in items] == ["dead"]
    assert API_KEY not in out


def test_failures_when_there_are_none(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "failures")[1] == "no failed or dead runs\n"


# -- retry, summarize --------------------------------------------------------------------

def _queued_task_id(out: str, session_id: str) -> str:
    prefix = f"{session_id}: queued summarize job "
    line = next(x for x in out.splitlines() if x.startswith(prefix))
    return line.removeprefix(prefix)


def test_retry_clears_the_block_and_the_queued_job_applies(
        low: None, worker_idle: None, capsys: pytest.CaptureFixture[str]) -> None:
    make_dead("broken")
    with db.transaction() as s:
        # As if the dead end came from lost leases: unless retry resets the
        # count, the next claim dead-letters the session again instead of applying.
        s.execute(update(ChatSession).where(ChatSession.id == "broken").values(lost_leases=4))
    assert session_row("broken").blocked_until is not None  # type: ignore[union-attr]

    code, out, err = run(capsys, "retry", "broken")

    assert code == 0, err
    task_id = _queued_task_id(out, "broken")
    wait_for(lambda: any(r.status == "applied" and r.task_id == task_id for r in runs("broken")),
             what="the retried job to apply")
    row = session_row("broken")
    assert row is not None and row.blocked_until is None and row.lost_leases == 0


def test_retry_unblocks_before_it_publishes(
        low: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    make_dead("broken")
    seen: list[tuple[object, ...]] = []

    def record_state(session_id: str, **_: object) -> bool:
        row = session_row(session_id)
        assert row is not None
        seen.append((row.blocked_until, row.lost_leases, row.enqueued_at is not None))
        return True

    # No broker here: what is under test is the state a published job starts from.
    monkeypatch.setattr(ops, "send", record_state)
    code, out, _ = run(capsys, "retry", "broken")
    assert code == 0 and out.startswith("broken: queued summarize job")
    assert seen == [(None, 0, True)]
    with db.transaction() as s:
        s.execute(update(ChatSession).values(enqueued_at=None))


def test_retry_all_dead_queues_only_sessions_whose_last_run_is_dead(
        low: None, worker_idle: None, capsys: pytest.CaptureFixture[str]) -> None:
    make_dead("dead-1")
    make_dead("dead-2")
    make_dead("healed")
    run_inline("healed")  # its latest run is applied now
    code, out, err = run(capsys, "retry", "--all-dead")
    assert code == 0, err
    assert {line.split(":")[0] for line in out.splitlines()} == {"dead-1", "dead-2"}
    wait_for(lambda: all(statuses(sid)[-1] == "applied" for sid in ("dead-1", "dead-2")),
             what="both retried jobs to apply")


def test_retry_unknown_session_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "retry", "nope")
    assert code == 1 and out == ""
    assert err == "recap: error: no chat session with id 'nope'\n"
    assert run(capsys, "retry", "--all-dead")[1] == "no dead sessions\n"


def test_summarize_now_runs_inline_and_prints_the_outcome(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    ids = seed("now", 12)
    code, out, err = run(capsys, "summarize", "now", "--now")
    assert code == 0, err
    outcome = json.loads(out)
    assert outcome["status"] == "applied" and outcome["messages_condensed"] == 5
    assert outcome["more_work"] is False
    assert message_ids("now") == ids[5:]
    assert runs("now")[-1].task_id.startswith("cli-")  # type: ignore[union-attr]


def test_summarize_now_errors_exit_1_without_traceback(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "summarize", "ghost", "--now")
    assert (code, err) == (1, "recap: error: no chat session with id 'ghost'\n")
    seed("keyless", 12)
    FAKE.always(error(401))
    code, _, err = run(capsys, "summarize", "keyless", "--now")
    assert code == 1
    assert err.startswith("recap: error: AuthenticationError 401")
    assert statuses("keyless") == ["dead"]  # permanent: dead-lettered at once


def test_summarize_now_transient_error_is_failed_and_handed_to_a_queued_retry(
        low: None, worker_idle: None, capsys: pytest.CaptureFixture[str]) -> None:
    seed("blip", 12)
    FAKE.script(error(529))  # one overloaded answer, then the default summaries
    code, _, err = run(capsys, "summarize", "blip", "--now")
    assert code == 1
    assert "a retry job was queued" in err and "recap: error: " in err
    wait_for(lambda: statuses("blip") == ["failed", "applied"], what="the queued retry")
    row = session_row("blip")
    assert row is not None and row.blocked_until is None  # not dead-lettered


def test_summarize_queues_or_reports_a_pending_job(
        low: None, worker_idle: None, capsys: pytest.CaptureFixture[str]) -> None:
    seed("later", 12)
    with db.transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "later")
                  .values(enqueued_at=utcnow()))
    code, out, _ = run(capsys, "summarize", "later")
    assert (code, out) == (0, "later: a summarize job is already pending\n")
    with db.transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "later").values(enqueued_at=None))

    code, out, _ = run(capsys, "summarize", "later")
    task_id = _queued_task_id(out, "later")
    wait_for(lambda: [r.task_id for r in runs("later")] == [task_id], what="the job to run")
    assert statuses("later") == ["applied"]


# -- sweep ----------------------------------------------------------------------------

def test_sweep_all_backfills_every_due_session_and_reruns_cleanly(
        low: None, worker_idle: None, capsys: pytest.CaptureFixture[str]) -> None:
    due = [f"due-{i}" for i in range(7)]
    for sid in due:
        seed(sid, 12)
    seed("small", 3)
    code, out, err = run(capsys, "sweep", "--all", "--batch", "3")
    assert code == 0, err
    assert out == "queued 7 sessions in 3 batches\n"
    wait_for(lambda: all("applied" in statuses(sid) for sid in due), what="every due job")
    wait_for(idle, what="every job to finish")
    assert run(capsys, "sweep", "--all")[1] == "queued 0 sessions in 0 batches\n"
    assert statuses("small") == []


def test_sweep_all_interrupted_reports_progress_and_leaves_no_orphan_marker(
        low: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(5):
        seed(f"s{i}", 12)
    sent: list[str] = []

    def send_then_ctrl_c(session_id: str) -> bool:
        if len(sent) == 3:
            raise KeyboardInterrupt
        sent.append(session_id)
        return True

    # No broker here: the interruption is what is under test.
    monkeypatch.setattr(ops, "send", send_then_ctrl_c)
    code, _, err = run(capsys, "sweep", "--all", "--batch", "2")
    assert code == 130
    assert "interrupted after 3 sessions queued" in err
    with db.transaction() as s:
        pending = set(s.scalars(select(ChatSession.id).where(ChatSession.enqueued_at.isnot(None))))
    assert pending == set(sent)  # the unsent session of the batch was released

    def send_all(session_id: str) -> bool:
        sent.append(session_id)
        return True

    monkeypatch.setattr(ops, "send", send_all)
    code, out, _ = run(capsys, "sweep", "--all")
    assert (code, out) == (0, "queued 2 sessions in 1 batches\n")
    assert sorted(sent) == [f"s{i}" for i in range(5)]
    with db.transaction() as s:
        s.execute(update(ChatSession).values(enqueued_at=None))


def test_sweep_one_pass(low: None, worker_idle: None,
                        capsys: pytest.CaptureFixture[str]) -> None:
    seed("one", 12)
    assert run(capsys, "sweep") == (0, "queued 1 sessions\n", "")
    wait_for(lambda: "applied" in statuses("one"), what="the swept job")


# -- context ----------------------------------------------------------------------------

def test_context_prints_the_assembled_json(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    seed("ctx", 2)
    system = tmp_path / "system.txt"
    system.write_text("You are terse.", encoding="utf-8")
    code, out, err = run(capsys, "context", "ctx", "--system", str(system))
    assert code == 0, err
    ctx = json.loads(out)
    assert ctx["system"].startswith("You are terse.")
    assert [m["role"] for m in ctx["messages"]] == ["user", "assistant"]
    code, _, err = run(capsys, "context", "ghost")
    assert code == 1 and err.startswith("recap: error:") and "ghost" in err
