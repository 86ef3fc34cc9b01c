"""The core scenarios on a SQLite file database: the embedded default must behave
exactly like PostgreSQL (same code paths, same counters, same fencing).

Each test points DATABASE_URL at a fresh SQLite file migrated with Alembic.
The summarizer is the real Claude one, talking to the local fake Messages API.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, inspect, select, update

from recap import db
from recap.api.ingest import add_message, after_reply
from recap.errors import TransientLLMError
from recap.models import ChatMessage, ChatSession
from recap.settings import get_settings
from recap.testing import error
from recap.worker.jobs.outcome import Job, Outcome
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from recap.worker.jobs.sweeper import due_query
from tests.env import FAKE, migrate
from tests.helpers import as_dict, message_ids, runs, seed, session_row


@pytest.fixture
def sqlite_url(tmp_path: Path, settings_env: Callable[..., None]) -> Iterator[str]:
    """DATABASE_URL on a fresh, migrated SQLite file for this test."""
    url = f"sqlite:///{tmp_path / 'recap.sqlite3'}"
    migrate(url)
    db.reset_engines()
    # Small thresholds keep the conversations short; the rules are the same.
    settings_env(DATABASE_URL=url, RECAP_POLICY="threshold", RECAP_TRIGGER_MESSAGES=10,
                 RECAP_TRIGGER_TOKENS=100,
                 RECAP_BATCH_SIZE=5, RECAP_KEEP_RECENT=4)
    assert get_settings().database_url == url
    assert db.get_engine().dialect.name == "sqlite"
    yield url
    db.reset_engines()


def token_counts(session_id: str) -> dict[int, int]:
    """Each active message's stored token count, by id."""
    with db.transaction() as s:
        rows = s.execute(select(ChatMessage.id, ChatMessage.token_count)
                         .where(ChatMessage.session_id == session_id))
        return {i: n for i, n in rows}


def _run(session_id: str, *, final: bool = True) -> Outcome:
    job = Job(task_id="t-sqlite", attempt=1, final_attempt=final)
    return summarize(session_id, job=job, res=get_resources())


@pytest.mark.unit
def test_migrations_apply_and_downgrade_to_base(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.sqlite3'}"
    migrate(url)
    engine = create_engine(url)
    assert {"chat_sessions", "chat_messages", "summary_runs"} <= set(
        inspect(engine).get_table_names())
    engine.dispose()
    migrate(url, "base", down=True)
    engine = create_engine(url)
    assert set(inspect(engine).get_table_names()) <= {"recap_alembic_version"}
    engine.dispose()
    migrate(url)  # and back up again on the same file


@pytest.mark.unit
def test_add_message_keeps_exact_counters(sqlite_url: str) -> None:
    ids = seed("s1", 7, words=12)
    assert ids == sorted(ids) and len(set(ids)) == 7
    row = session_row("s1")
    assert row is not None
    assert row.message_count == 7
    with db.transaction() as s:
        total = s.scalar(select(func.sum(ChatMessage.token_count))
                         .where(ChatMessage.session_id == "s1"))
    assert total is not None and row.active_tokens == total > 0


def test_summarize_applies_deletes_exactly_the_batch(sqlite_url: str) -> None:
    ids = seed("s1", 14, words=30)
    before = session_row("s1")
    assert before is not None
    tokens = token_counts("s1")

    outcome = _run("s1")

    assert outcome.status == "applied", outcome
    assert outcome.messages_condensed == 5
    # The oldest batch_size messages outside the newest keep_recent are gone, no others.
    assert message_ids("s1") == ids[5:]
    after = session_row("s1")
    assert after is not None
    assert after.rolling_summary
    assert after.summary_version == 1
    assert after.message_count == 9
    assert after.summarized_message_count == 5
    assert after.active_tokens == before.active_tokens - sum(tokens[i] for i in ids[:5])
    assert after.lease_token is None and after.lease_expires_at is None
    [run] = runs("s1")
    assert (run.status, run.messages_condensed, run.first_message_id, run.last_message_id) == (
        "applied", 5, ids[0], ids[4])
    assert run.model == get_settings().model
    # The prompt carried exactly the batch: messages 0-4, not 5 onwards.
    [prompt] = FAKE.prompts()
    assert "(msg 0)" in prompt and "(msg 4)" in prompt and "(msg 5)" not in prompt


@pytest.mark.unit
def test_failed_call_changes_nothing(sqlite_url: str) -> None:
    ids = seed("s1", 14, words=30)
    before = as_dict(session_row("s1"))
    FAKE.script(error(500, "boom"))

    with pytest.raises(TransientLLMError):
        _run("s1", final=False)

    assert message_ids("s1") == ids
    after = as_dict(session_row("s1"))
    # Only the pending marker (a retry is coming) and updated_at (the lease was taken
    # and released) moved; summary, version, counters and lease are as before.
    assert after.pop("enqueued_at") is not None
    for moved in ("enqueued_at", "updated_at"):
        before.pop(moved)
    after.pop("updated_at")
    assert after == before
    [run] = runs("s1")
    assert run.status == "failed" and "500" in (run.error or "")


def test_two_concurrent_jobs_apply_once(sqlite_url: str) -> None:
    ids = seed("s1", 14, words=30)
    gate = FAKE.hold()
    outcomes: list[Outcome] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            outcomes.append(_run("s1"))
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    first = threading.Thread(target=work)
    first.start()
    gate.wait_entered()  # the first job holds the lease during its call
    second = _run("s1")
    assert (second.status, second.reason) == ("skipped", "lease held by another job")
    gate.release()
    first.join(60)

    assert not first.is_alive() and not errors
    assert [o.status for o in outcomes] == ["applied"]
    assert message_ids("s1") == ids[5:]
    row = session_row("s1")
    assert row is not None
    assert (row.summary_version, row.message_count, row.summarized_message_count) == (1, 9, 5)
    assert [r.status for r in runs("s1")] == ["skipped", "applied"]
    assert len(FAKE.requests) == 1


@pytest.mark.unit
def test_expired_lease_is_reclaimed_and_live_one_is_not(sqlite_url: str) -> None:
    # Timestamp comparisons (tz-aware Python values against SQLite's text column).
    seed("s1", 14, words=30)
    now = db.utcnow()
    with db.transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "s1").values(
            lease_token="live", lease_expires_at=now + timedelta(seconds=60)))
    skipped = _run("s1")
    assert (skipped.status, skipped.reason) == ("skipped", "lease held by another job")
    assert after_reply_in_rolled_back_tx("s1") is False  # leased: the hook stays quiet

    with db.transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "s1").values(
            lease_token="dead", lease_expires_at=now - timedelta(seconds=1)))
    outcome = _run("s1")
    assert outcome.status == "applied"
    row = session_row("s1")
    assert row is not None and row.lease_token is None and row.lost_leases == 0


def after_reply_in_rolled_back_tx(session_id: str) -> bool:
    """The hook's decision on SQLite, without publishing (the transaction rolls back)."""
    with db.session_factory()() as s:
        s.begin()
        queued = after_reply(session_id, db=s)
        s.rollback()
    return queued


@pytest.mark.unit
def test_hook_stays_quiet_below_thresholds(sqlite_url: str) -> None:
    add_message("small", "user", "hello there")
    assert after_reply_in_rolled_back_tx("small") is False


@pytest.mark.unit
def test_hook_decides_from_counters(sqlite_url: str) -> None:
    seed("big", 14, words=30)
    assert after_reply_in_rolled_back_tx("big") is True
    row = session_row("big")
    assert row is not None and row.enqueued_at is None  # the marker rolled back too


@pytest.mark.unit
def test_sweeper_reads_counters_and_markers(sqlite_url: str) -> None:
    add_message("small", "user", "hello there")
    seed("big", 14, words=30)
    settings = get_settings()
    now = db.utcnow()
    with db.transaction() as s:
        assert list(s.scalars(due_query(settings, now=now, limit=None))) == ["big"]
        # A fresh pending marker hides the session; a stale one does not.
        s.execute(update(ChatSession).where(ChatSession.id == "big").values(enqueued_at=now))
        assert list(s.scalars(due_query(settings, now=now, limit=None))) == []
        stale = now - timedelta(seconds=settings.enqueue_stale_s + 1)
        s.execute(update(ChatSession).where(ChatSession.id == "big").values(enqueued_at=stale))
        assert list(s.scalars(due_query(settings, now=now, limit=None))) == ["big"]
