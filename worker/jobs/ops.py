"""The database side of the operator commands: stats, failures, retry and backfill.

Query helpers take the database session as ``db=`` and never commit. ``queue_jobs`` and
``backfill`` own their transactions, and publish jobs only after the
transaction that set the pending markers has committed (like the sweeper).
Every query here runs unchanged on PostgreSQL and SQLite.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, case, func, select, update
from sqlalchemy.orm import Session, aliased

from models import ChatSession, SummaryRun, TitleRun
from worker.db import transaction
from worker.errors import BrokerUnavailable, SessionNotFound
from worker.jobs.enqueue import mark_pending, send, stale_before
from worker.jobs.sweeper import claim_due, due_query
from worker.settings import Settings

FAILURE_STATUSES = ("failed", "dead")


@dataclass
class Stats:
    """One snapshot of Recap's state; token counts are tiktoken estimates unless 'api'."""

    sessions: int = 0
    active_messages: int = 0
    active_tokens: int = 0
    summary_tokens: int = 0
    summaries_applied: int = 0
    messages_condensed: int = 0
    tokens_saved: int = 0
    runs_by_status: dict[str, int] = field(default_factory=dict)
    failed_runs: int = 0
    dead_runs: int = 0
    latency_p50_ms: int | None = None
    latency_p95_ms: int | None = None
    api_input_tokens: int = 0
    api_output_tokens: int = 0
    sessions_needing_escalation: int = 0
    sessions_leased: int = 0
    sessions_pending: int = 0
    sessions_blocked: int = 0
    # Title jobs (title_runs): sessions with a title, calls, failed calls, API usage.
    sessions_titled: int = 0
    title_runs: int = 0
    title_failures: int = 0
    title_input_tokens: int = 0
    title_output_tokens: int = 0


def count_where(condition: ColumnElement[bool]) -> Any:
    # SUM(CASE ...) rather than FILTER (...): the same SQL on both databases.
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


def session_columns(settings: Settings, now: datetime) -> dict[str, ColumnElement[Any]]:
    """The per-session counters of :class:`Stats`, as aggregates over chat_sessions
    (``recap metrics`` adds its own to the same single pass)."""
    stale = stale_before(now, settings)
    return {
        "sessions": func.count(),
        "active_messages": func.coalesce(func.sum(ChatSession.message_count), 0),
        "active_tokens": func.coalesce(func.sum(ChatSession.active_tokens), 0),
        "summary_tokens": func.coalesce(func.sum(ChatSession.summary_tokens), 0),
        "sessions_needing_escalation": count_where(ChatSession.needs_escalation.is_(True)),
        "sessions_leased": count_where(ChatSession.lease_token.isnot(None)
                                        & (ChatSession.lease_expires_at > now)),
        "sessions_pending": count_where(ChatSession.enqueued_at > stale),
        "sessions_blocked": count_where(ChatSession.blocked_until > now),
    }


def session_counts(stats: Stats, *, db: Session, settings: Settings,
                   now: datetime) -> None:
    """Fill the per-session counters of ``stats`` from chat_sessions."""
    columns = session_columns(settings, now)
    row = db.execute(select(*(c.label(name) for name, c in columns.items()))).one()
    for name in columns:
        setattr(stats, name, int(row._mapping[name]))


def run_totals(*, db: Session, by: ColumnElement[Any] | None = None,
               where: ColumnElement[bool] | None = None) -> list[Any]:
    """Rows of (status[, by], runs, messages condensed, API input tokens, API output
    tokens) over the summary_runs rows matching ``where`` (default all), grouped by
    status (and by the expression ``by``, which may refer to summary_runs' columns)."""
    rows = select(SummaryRun.status, SummaryRun.messages_condensed, SummaryRun.input_tokens,
                  SummaryRun.output_tokens, *([] if by is None else [by.label("by")]))
    inner = (rows if where is None else rows.where(where)).subquery()
    keys = [inner.c.status, *([] if by is None else [inner.c.by])]
    return list(db.execute(
        select(*keys, func.count(),
               func.coalesce(func.sum(inner.c.messages_condensed), 0),
               func.coalesce(func.sum(inner.c.input_tokens), 0),
               func.coalesce(func.sum(inner.c.output_tokens), 0))
        .group_by(*keys).order_by(*keys)).all())


def run_counts(stats: Stats, *, db: Session) -> None:
    """Fill the per-status run counters and API token sums from summary_runs."""
    for status, count, condensed, tokens_in, tokens_out in run_totals(db=db):
        stats.runs_by_status[status] = int(count)
        stats.api_input_tokens += int(tokens_in or 0)
        stats.api_output_tokens += int(tokens_out or 0)
        if status == "applied":
            stats.summaries_applied = int(count)
            stats.messages_condensed = int(condensed)
    stats.failed_runs = stats.runs_by_status.get("failed", 0)
    stats.dead_runs = stats.runs_by_status.get("dead", 0)


def tokens_saved(*, db: Session) -> int:
    """Context tokens the summaries save now.

    Saved = the tokens of every message condensed (and deleted) in a session
    that still exists (``summary_runs.condensed_tokens``), minus the summaries
    that replaced them.
    """
    condensed = db.scalar(
        select(func.coalesce(func.sum(SummaryRun.condensed_tokens), 0))
        .where(SummaryRun.status == "applied",
               SummaryRun.session_id.in_(select(ChatSession.id))))
    summaries = db.scalar(select(func.coalesce(func.sum(ChatSession.summary_tokens), 0)))
    return int(condensed or 0) - int(summaries or 0)


def nearest_rank(p: float, n: int) -> int:
    """0-based index of the ``p``-th percentile of ``n`` sorted values (nearest rank)."""
    if not 0 < p <= 100 or n < 1:
        raise ValueError(f"need 0 < p <= 100 and n >= 1, got p={p}, n={n}")
    return max(1, math.ceil(p / 100 * n)) - 1


def latency_percentiles(*, db: Session,
                        ps: Sequence[float] = (50, 95)) -> dict[float, int | None]:
    """Percentiles of applied runs' latency_ms, picked in SQL (no full fetch)."""
    applied = (SummaryRun.status == "applied", SummaryRun.latency_ms.isnot(None))
    n = int(db.scalar(select(func.count()).select_from(SummaryRun).where(*applied)) or 0)
    if n == 0:
        return {p: None for p in ps}
    return {p: db.scalar(select(SummaryRun.latency_ms).where(*applied)
                              .order_by(SummaryRun.latency_ms)
                              .offset(nearest_rank(p, n)).limit(1))
            for p in ps}


def title_counts(stats: Stats, *, db: Session) -> None:
    """Fill the title counters of ``stats`` from chat_sessions and title_runs."""
    stats.sessions_titled = int(db.scalar(select(func.count()).select_from(ChatSession)
                                          .where(ChatSession.title.isnot(None))) or 0)
    for status, count, tokens_in, tokens_out in db.execute(
            select(TitleRun.status, func.count(),
                   func.coalesce(func.sum(TitleRun.input_tokens), 0),
                   func.coalesce(func.sum(TitleRun.output_tokens), 0))
            .group_by(TitleRun.status)):
        stats.title_runs += int(count)
        stats.title_failures += int(count) if status == "failed" else 0
        stats.title_input_tokens += int(tokens_in or 0)
        stats.title_output_tokens += int(tokens_out or 0)


def collect_stats(*, db: Session, settings: Settings, now: datetime) -> Stats:
    stats = Stats()
    session_counts(stats, db=db, settings=settings, now=now)
    run_counts(stats, db=db)
    title_counts(stats, db=db)
    stats.tokens_saved = tokens_saved(db=db)
    pct = latency_percentiles(db=db)
    stats.latency_p50_ms, stats.latency_p95_ms = pct[50], pct[95]
    return stats


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
                      .values(blocked_until=None, lost_leases=0))
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
