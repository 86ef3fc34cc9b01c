"""The ingest API and the after_reply hook: validation, coalescing, commit-only enqueue."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from sqlalchemy import func, select

from recap import app
from recap.api.ingest import add_message, after_reply
from recap.db import session_factory, transaction, utcnow
from recap.errors import InvalidInput
from recap.models import ChatMessage, ChatSession
from recap.settings import get_settings
from recap.store.enqueue import BREAKER
from recap.testing import FakeAnthropic
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from recap.worker.jobs.sweeper import due_query, sweep
from tests.helpers import LOW, message_ids, runs, seed, session_row, statuses, wait_for


def _drop_connections() -> None:
    # The app caches its connection and producer pools; forget them so the next
    # publish connects to the (new) broker URL.
    app._pool = None
    app.amqp._producer_pool = None


def count_rows() -> tuple[int, int]:
    with transaction() as s:
        return (s.scalar(select(func.count()).select_from(ChatMessage)) or 0,
                s.scalar(select(func.count()).select_from(ChatSession)) or 0)


@pytest.mark.parametrize(("args", "problem"), [
    (("s", "robot", "hi"), "unknown role 'robot'"),
    (("s", "user", ""), "empty"),
    (("s", "user", "  \n\t "), "whitespace"),
    (("s", "user", "a\x00b"), "NUL"),
    (("s", "user", "bad \ud800 surrogate"), "not valid text"),
    (("s", "user", b"bytes"), "content must be a str"),
    ((42, "user", "hi"), "session_id must be a str, got int"),
    (("", "user", "hi"), "session_id is empty"),
    (("x" * 256, "user", "hi"), "at most 255"),
])
def test_bad_input_is_rejected_and_writes_nothing(args: tuple, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        add_message(*args)
    assert count_rows() == (0, 0)


def test_add_message_keeps_counters_exact_and_ids_increasing() -> None:
    ids = [add_message("c", "user", f"message number {i}") for i in range(5)]
    assert ids == sorted(ids)
    row = session_row("c")
    assert row is not None and row.message_count == 5
    with transaction() as s:
        total = s.scalar(select(func.sum(ChatMessage.token_count))
                         .where(ChatMessage.session_id == "c"))
    assert total and row.active_tokens == total > 0


def test_add_message_joins_the_callers_transaction() -> None:
    with session_factory()() as db:
        with db.begin():
            add_message("tx", "user", "kept", db=db)
        db.begin()
        add_message("tx", "user", "rolled back", db=db)
        db.rollback()
    row = session_row("tx")
    assert row is not None and row.message_count == 1 and len(message_ids("tx")) == 1


def test_hook_enqueues_nothing_below_thresholds_then_once_when_crossing(
        settings_env: Callable[..., None], published: list[str]) -> None:
    settings_env(**LOW)
    for i in range(10):
        add_message("cross", "user" if i % 2 == 0 else "assistant", "word " * 30)
        assert after_reply("cross") is False
    assert published == []
    add_message("cross", "user", "word " * 30)
    assert after_reply("cross") is True
    assert after_reply("cross") is False  # coalesced: one job is already pending
    assert published == ["cross"]


@pytest.mark.usefixtures("celery_worker_thread")
def test_burst_of_replies_while_a_job_is_pending_is_coalesced(
        settings_env: Callable[..., None], published: list[str], fake_api: FakeAnthropic) -> None:
    settings_env(**LOW)
    # The first job is held inside its Claude call through the whole burst.
    gate = fake_api.hold(calls=1)
    seed("burst", 11)
    assert after_reply("burst") is True
    gate.wait_entered()
    for i in range(100):
        add_message("burst", "assistant", f"reply {i}")
        assert after_reply("burst") is False  # the running job holds the lease
    assert published == ["burst"]
    gate.release()
    # Once it applies, follow-ups (one at a time) work through what the burst added.
    wait_for(lambda: (r := session_row("burst")) is not None and r.lease_token is None
             and r.enqueued_at is None, timeout=120, what="worker idle")
    jobs = runs("burst")
    assert jobs[0].status == "applied"
    assert published.count("burst") <= sum(r.status in ("applied", "failed") for r in jobs) + 2


def test_enqueue_only_after_commit_and_never_on_rollback(
        settings_env: Callable[..., None], published: list[str]) -> None:
    settings_env(**LOW)
    seed("tx-hook", 11)
    with session_factory()() as db:
        db.begin()
        add_message("tx-hook", "assistant", "one more", db=db)
        assert after_reply("tx-hook", db=db) is True
        with db.begin_nested():  # a SAVEPOINT released: must not send early
            add_message("tx-hook", "user", "inside a savepoint", db=db)
        assert published == []
        db.commit()
    assert published == ["tx-hook"]

    seed("rb-hook", 11)
    with session_factory()() as db:
        db.begin()
        add_message("rb-hook", "assistant", "one more", db=db)
        assert after_reply("rb-hook", db=db) is True
        db.rollback()
    assert published == ["tx-hook"]
    row = session_row("rb-hook")
    assert row is not None and row.enqueued_at is None  # the marker rolled back too


def test_broker_down_does_not_raise_and_the_sweeper_catches_up(
        settings_env: Callable[..., None], caplog: pytest.LogCaptureFixture,
        fake_api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch,
        celery_worker_thread: object) -> None:
    settings_env(**LOW)
    seed("outage", 11)
    # Celery reads CELERY_BROKER_URL from the environment before its own conf.
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:1/0")  # nothing listens there
    _drop_connections()
    try:
        with caplog.at_level(logging.WARNING, logger="recap.enqueue"):
            assert after_reply("outage") is False
        assert "outage" in caplog.text and "sweeper" in caplog.text
        row = session_row("outage")
        assert row is not None and row.enqueued_at is None
        # One failure pauses publishing: the next replies do not even try (and
        # set no marker), so they stay fast while the broker is down.
        assert BREAKER.is_open()
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="recap.enqueue"):
            assert after_reply("outage") is False
        assert "could not enqueue" not in caplog.text
    finally:
        monkeypatch.undo()
        _drop_connections()
        # The failure paused publishing in this process; the sweeper runs in the
        # worker's process in production, so here the pause is lifted by hand.
        BREAKER.reset()
    settings_env(**LOW)
    assert sweep(get_settings()) == 1
    wait_for(lambda: "applied" in statuses("outage"), what="sweeper-driven apply")


def test_hook_stops_queueing_once_the_normal_rule_is_blocked(
        settings_env: Callable[..., None], published: list[str], fake_api: FakeAnthropic) -> None:
    # A full batch of 5 small messages stays under 500 tokens while the session
    # as a whole passes it: the normal rule cannot fire until a summary applies.
    settings_env(RECAP_POLICY="threshold", RECAP_TRIGGER_MESSAGES=10,
                 RECAP_TRIGGER_TOKENS=500, RECAP_BATCH_SIZE=5,
                 RECAP_KEEP_RECENT=4)
    seed("blocked", 14)
    assert after_reply("blocked") is True
    # The job it queued may reach a worker left running by an earlier test in this
    # process: whichever claims the session first records the verdict (the other
    # finds the lease held).
    summarize("blocked", job=Job("t"), res=get_resources())
    wait_for(lambda: any(r.status == "skipped"
                         and (r.reason or "").startswith("below thresholds: 14 messages")
                         for r in runs("blocked")), what="the normal rule's verdict")
    row = session_row("blocked")
    assert row is not None and row.normal_blocked
    for i in range(5):
        add_message("blocked", "assistant", f"short reply {i}")
        assert after_reply("blocked") is False
    assert published == ["blocked"]
    assert "blocked" not in {sid for sid in _due()}


def _due() -> list[str]:
    with transaction() as s:
        return list(s.scalars(due_query(get_settings(), now=utcnow(), limit=None)))


def test_after_reply_never_raises_when_the_database_is_unreachable(
        settings_env: Callable[..., None], caplog: pytest.LogCaptureFixture) -> None:
    seed("db-down", 3)
    settings_env(DATABASE_URL="postgresql+psycopg://postgres@127.0.0.1:1/nowhere")
    with caplog.at_level(logging.WARNING, logger="recap.ingest"):
        assert after_reply("db-down") is False
    assert "db-down" in caplog.text and "DatabaseNotReady" in caplog.text
    assert "is unreachable" in caplog.text and "recap db upgrade" in caplog.text
    with pytest.raises(InvalidInput):  # a bad id is still the caller's bug
        after_reply("")
