"""``recap retry``, ``summarize``, ``sweep`` and ``context``, run in-process with
``main([...])`` against the test PostgreSQL database, the fake Messages API and
(where jobs are queued) a real in-process Celery worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select, update

from recap import db
from recap.core.context.assemble import system_text
from recap.db import utcnow
from recap.models import ChatSession
from recap.ops import requeue as ops
from recap.testing import error
from tests.cli.common import idle, make_dead, run, run_inline
from tests.env import FAKE
from tests.helpers import message_ids, runs, seed, session_of, session_row, statuses, wait_for

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
    assert session_of("broken").blocked_until is not None

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
    assert str(runs("now")[-1].task_id).startswith("cli-")


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
    assert system_text(ctx["system"]).startswith("You are terse.")
    assert [m["role"] for m in ctx["messages"]] == ["user", "assistant"]
    code, _, err = run(capsys, "context", "ghost")
    assert code == 1 and err.startswith("recap: error:") and "ghost" in err
