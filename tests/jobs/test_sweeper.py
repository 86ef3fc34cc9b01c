"""The sweeper heals lost enqueues, expired leases and dead-lettered sessions."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import update

from recap.db import transaction, utcnow
from recap.models import ChatSession
from recap.sessions.overrides import configure_session
from recap.settings import get_settings
from recap.testing import FakeAnthropic
from recap.worker.celery_app import celery_config
from recap.worker.jobs.sweeper import due_query, sweep
from tests.helpers import LOW, runs, seed, session_of, session_row, statuses, wait_for


@pytest.fixture(autouse=True)
def low(settings_env: Callable[..., None]) -> None:
    settings_env(**LOW)


def set_row(sid: str, **values: object) -> None:
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == sid).values(**values))


def due_ids() -> set[str]:
    with transaction() as s:
        return set(s.scalars(due_query(get_settings(), now=utcnow(), limit=None)))


def test_due_query_selects_only_sessions_nobody_handles() -> None:
    now = utcnow()
    for sid in ("free", "leased", "expired", "pending", "stale", "blocked", "cooled", "small"):
        seed(sid, 11 if sid != "small" else 3)
    set_row("leased", lease_token="t", lease_expires_at=now + timedelta(minutes=5))
    set_row("expired", lease_token="t", lease_expires_at=now - timedelta(seconds=1))
    set_row("pending", enqueued_at=now)
    set_row("stale", enqueued_at=now - timedelta(hours=2))
    set_row("blocked", blocked_until=now + timedelta(hours=1))
    set_row("cooled", blocked_until=now - timedelta(seconds=1))
    assert due_ids() == {"free", "expired", "stale", "cooled"}


def test_capacity_sessions_are_due_without_the_message_trigger(
        settings_env: Callable[..., None]) -> None:
    settings_env(RECAP_CONTEXT_BUDGET_TOKENS=2000)
    seed("fat", 4, words=500)  # few messages, > 80% of a 2000-token budget
    assert "fat" in due_ids()


def test_sweep_is_bounded_and_marks_pending(
        celery_worker_thread: object, fake_api: FakeAnthropic) -> None:
    for i in range(5):
        seed(f"b{i}", 11)
    assert sweep(get_settings(), limit=2) == 2
    with transaction() as s:
        pending = [r.id for r in s.query(ChatSession).filter(ChatSession.enqueued_at.isnot(None))]
    assert len(pending) <= 2
    wait_for(lambda: sum("applied" in statuses(f"b{i}") for i in range(5)) == 2, what="2 applied")
    sweep(get_settings())
    wait_for(lambda: all("applied" in statuses(f"b{i}") for i in range(5)), what="all applied")
    assert sweep(get_settings()) == 0  # nothing left to do


def test_expired_lease_of_a_dead_worker_is_recovered(
        celery_worker_thread: object, fake_api: FakeAnthropic) -> None:
    seed("crashed", 11)
    set_row("crashed", lease_token="dead-worker", lease_expires_at=utcnow() - timedelta(seconds=1))
    assert sweep(get_settings()) == 1
    wait_for(lambda: "applied" in statuses("crashed"), what="recovered apply")
    row = session_row("crashed")
    assert row is not None and row.lease_token is None and row.lost_leases == 0


def test_a_session_that_keeps_killing_workers_is_dead_lettered(celery_worker_thread: object,
                                                                 fake_api: FakeAnthropic) -> None:
    seed("killer", 11)
    set_row("killer", lease_token="dead-worker", lease_expires_at=utcnow() - timedelta(seconds=1),
            lost_leases=get_settings().max_lost_leases)
    assert sweep(get_settings()) == 1
    wait_for(lambda: "dead" in statuses("killer"), what="dead-letter")
    row = session_row("killer")
    assert row is not None and row.blocked_until is not None and row.lease_token is None
    assert fake_api.requests == []
    assert "killer" not in due_ids()  # the sweeper leaves it alone during the cool-down


@pytest.mark.unit
def test_beat_schedule_runs_the_sweeper() -> None:
    conf = celery_config(get_settings())
    entry = conf["beat_schedule"]["recap-sweep"]
    assert entry["task"] == "recap.tasks.sweep" and entry["schedule"] == 300.0


def test_due_query_uses_indexes_on_postgres() -> None:
    from sqlalchemy import text

    with transaction() as s:
        s.execute(text("SET LOCAL enable_seqscan = off"))
        q = due_query(get_settings(), now=utcnow(), limit=500)
        sql = q.compile(s.get_bind(), compile_kwargs={"literal_binds": True})
        plan = "\n".join(s.scalars(text(f"EXPLAIN {sql}")))
    assert "ix_chat_sessions" in plan, plan


def test_not_due_override_sessions_cannot_starve_a_due_one(
        settings_env: Callable[..., None]) -> None:
    # More not-due sessions with overrides than one batch, each
    # bigger than the due ones, must not hide the due sessions whose publish was lost.
    settings_env(**LOW, RECAP_SWEEP_BATCH=5)
    big = [f"big{i}" for i in range(7)]
    for sid in big:
        configure_session(sid, {"prompt": "es"}, create=True)
        seed(sid, 5, words=300)  # many tokens, too few messages: not due
    configure_session("zz-due-es", {"prompt": "es"}, create=True)  # after every big one by id
    for sid in ("zz-due-es", "due-global"):
        seed(sid, 11)  # due, and no job pending (its publish was lost)
    sizes = {sid: session_of(sid).active_tokens for sid in (*big, "zz-due-es", "due-global")}
    assert min(sizes[sid] for sid in big) > max(sizes["zz-due-es"], sizes["due-global"])
    assert sweep(get_settings()) == 2
    assert {sid for sid in sizes if queued(sid)} == {"zz-due-es", "due-global"}


def queued(sid: str) -> bool:
    """A job was queued for ``sid``: its marker is set, or the in-process worker (started
    by an earlier test) already claimed it (lease held) or ran it (a run recorded)."""
    row = session_row(sid)
    assert row is not None
    return row.enqueued_at is not None or row.lease_token is not None or bool(runs(sid))
