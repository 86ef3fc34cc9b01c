"""The database side of the operator commands: failures, retry and backfill (stats: jobs.stats).

Query helpers take the database session as ``db=`` and never commit. ``queue_jobs`` and
``backfill`` own their transactions, and publish jobs only after the
transaction that set the pending markers has committed (like the sweeper).
Every query here runs unchanged on PostgreSQL and SQLite.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, aliased

from recap.db import transaction
from recap.errors import BrokerUnavailable, SessionNotFound
from recap.models import ChatSession, SummaryRun, TitleRun
from recap.settings import Settings
from recap.store.enqueue import mark_pending, send
from recap.worker.jobs.sweeper import claim_due, due_query

FAILURE_STATUSES = ("failed", "dead")


@dataclass(frozen=True)
class Failure:
    created_at: datetime | None
    session_id: str
    task_id: str | None
    attempt: int
    status: str
    reason: str | None
    error: str | None
    job: str = "summarize"  # or "title" (a title_runs row)


def failures(*, db: Session, limit: int) -> list[Failure]:
    """The newest failed and dead runs of summarize and title jobs, newest first."""
    rows = db.execute(
        select(SummaryRun.created_at, SummaryRun.session_id, SummaryRun.task_id,
               SummaryRun.attempt, SummaryRun.status, SummaryRun.reason, SummaryRun.error)
        .where(SummaryRun.status.in_(FAILURE_STATUSES))
        .order_by(SummaryRun.id.desc()).limit(limit)).all()
    titles = db.execute(
        select(TitleRun.created_at, TitleRun.session_id, TitleRun.error)
        .where(TitleRun.status == "failed").order_by(TitleRun.id.desc()).limit(limit)).all()
    merged = [Failure(*row) for row in rows] + [
        Failure(at, sid, None, 1, "failed", "title call", error, job="title")
        for at, sid, error in titles]
    # Each list is newest first; a stable sort keeps that order within equal times.
    merged.sort(key=lambda f: f.created_at.timestamp() if f.created_at else 0.0, reverse=True)
    return merged[:limit]


def dead_session_ids(*, db: Session) -> list[str]:
    """Existing sessions whose most recent run is dead."""
    inner = aliased(SummaryRun)
    latest = (select(func.max(inner.id)).where(inner.session_id == ChatSession.id)
              .correlate(ChatSession).scalar_subquery())
    return list(db.scalars(
        select(ChatSession.id).join(SummaryRun, SummaryRun.id == latest)
        .where(SummaryRun.status == "dead").order_by(ChatSession.id)))


def missing_sessions(session_ids: Sequence[str], *, db: Session) -> list[str]:
    found = set(db.scalars(select(ChatSession.id).where(ChatSession.id.in_(session_ids))))
    return [sid for sid in session_ids if sid not in found]


@dataclass(frozen=True)
class Queued:
    session_id: str
    status: str  # "queued" | "already pending" | "not sent" (broker unreachable)
    task_id: str | None = None


def queue_jobs(session_ids: Sequence[str], *, settings: Settings, now: datetime,
               unblock: bool = False) -> list[Queued]:
    """Queue one summarize job per session, coalescing with any pending one.

    With ``unblock``, first clears the dead-letter state (blocked_until and
    lost_leases). Raises SessionNotFound, changing nothing, if any id is unknown.
    """
    with transaction() as s:
        missing = missing_sessions(session_ids, db=s)
        if missing:
            raise SessionNotFound("no chat session with id " + ", ".join(map(repr, missing)))
        if unblock:
            s.execute(update(ChatSession).where(ChatSession.id.in_(session_ids))
                      .values(blocked_until=None, lost_leases=0, noop_backoff_until=None))
        marked = {sid for sid in session_ids if mark_pending(sid, db=s, now=now, settings=settings)}
    return [publish(sid) if sid in marked else Queued(sid, "already pending")
            for sid in session_ids]


def publish(session_id: str) -> Queued:
    """Send the job of a session whose pending marker is committed."""
    task_id = str(uuid.uuid4())  # chosen here so the operator can find it in Flower
    if send(session_id, task_id=task_id):
        return Queued(session_id, "queued", task_id)
    return Queued(session_id, "not sent")


@dataclass
class Backfill:
    batches: int = 0
    queued: int = 0
    not_sent: int = 0
    last_id: str | None = None  # the keyset cursor: every id up to it was looked at


def backfill(settings: Settings, *, batch: int, now: Callable[[], datetime],
             progress: Backfill, on_batch: Callable[[Backfill], None] | None = None) -> Backfill:
    """Queue every due session, ``batch`` per transaction, walking ids in order.

    Walking by id visits each session at most once per call, so sessions that a
    running worker makes due again (or skips) cannot loop us forever; they are
    left to the next sweep. Updates ``progress`` in place so an interrupted
    caller can report it. Stops at the first failed publish (raises
    BrokerUnavailable): the broker is down and the rest would fail too.
    """
    while True:
        at = now()
        query = due_query(settings, now=at, limit=None).order_by(None)
        if progress.last_id is not None:
            query = query.where(ChatSession.id > progress.last_id)
        with transaction() as s:
            ids, marked = claim_due(query.order_by(ChatSession.id).limit(batch), settings,
                                    db=s, now=at)
        if not ids:
            return progress
        progress.batches += 1
        _send_batch(marked, marked_at=at, progress=progress)
        progress.last_id = ids[-1]
        if on_batch is not None:
            on_batch(progress)


def _send_batch(marked: Sequence[str], *, marked_at: datetime, progress: Backfill) -> None:
    unsent = list(marked)
    try:
        while unsent:
            if not send(unsent[0]):  # send has cleared this one's marker itself
                progress.not_sent += 1
                raise BrokerUnavailable(f"could not publish the job of session {unsent[0]!r}")
            unsent.pop(0)
            progress.queued += 1
    finally:
        if unsent:
            # Interrupted or broker down: a marker without a job would keep the
            # hook and the sweeper away from these sessions until it goes stale.
            with transaction() as s:
                s.execute(update(ChatSession)
                          .where(ChatSession.id.in_(unsent),
                                 ChatSession.enqueued_at == marked_at)
                          .values(enqueued_at=None))
