"""The sweeper: finds sessions that need work and nobody is handling, and queues them.

Heals lost enqueues, broker outages, expired leases (dead workers) and
dead-lettered sessions once their cool-down has passed. A session whose jobs
found nothing to do is left alone for a back-off period that doubles while its
context stays the same (recap.worker.jobs.claim.back_off_noops). Sessions on the global
thresholds are judged in SQL (one indexed query on the counters); sessions with
their own overrides are paged through and judged with their settings. At most
RECAP_SWEEP_BATCH sessions are queued per run. Each run also deletes archived
messages past RECAP_ARCHIVE_RETENTION_DAYS, in bounded batches (recap.worker.jobs.expire).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, or_, select
from sqlalchemy.orm import Session

from recap.core.planning import adaptive, policy
from recap.db import db_now, insert_or_update, transaction, utcnow
from recap.errors import InvalidInput
from recap.models import ChatSession, Heartbeat
from recap.settings import Settings, effective
from recap.store.enqueue import mark_pending, send, stale_before
from recap.store.fence import lease_free
from recap.worker.jobs.expire import purge_archive
from recap.worker.jobs.titles import sweep_titles

log = logging.getLogger("recap.sweeper")

# heartbeats.name of the sweeper's row: when a sweep last completed (recap metrics).
SWEEP_HEARTBEAT = "sweep"


def blocked_now(settings: Settings) -> ColumnElement[bool]:
    """normal_blocked, and computed under these very thresholds (else it no longer holds)."""
    return ChatSession.normal_blocked.is_(True) & (
        ChatSession.normal_blocked_under == settings.thresholds_key())


def backoff_over(now: datetime) -> ColumnElement[bool]:
    """Not backing off after no-op runs: never did, the period is over, or the
    context changed since (recap.worker.jobs.claim.back_off_noops)."""
    return or_(ChatSession.noop_backoff_until.is_(None), ChatSession.noop_backoff_until <= now,
               ChatSession.noop_context_tokens
               != ChatSession.summary_tokens + ChatSession.active_tokens)


def due_query(settings: Settings, *, now: datetime, limit: int | None) -> Select[Any]:
    """Sessions free to be queued (no live lease, no pending job, not cooling down)
    that are due: decided in SQL for sessions on the global thresholds; every
    session with overrides is a candidate, judged by :func:`due_ids`. Biggest first."""
    cap = math.ceil(policy.CAPACITY_USAGE * settings.context_budget_tokens)
    stale = stale_before(now, settings)
    context = ChatSession.summary_tokens + ChatSession.active_tokens
    # Adaptive: each session's high-water mark is its own (due_ids decides), never
    # below the lowest one.
    due = (context > adaptive.lowest_high_water(settings.context_budget_tokens)
           if settings.policy == "adaptive" else
           or_(and_(ChatSession.message_count > settings.trigger_messages,
                    ChatSession.active_tokens > settings.trigger_tokens,
                    ~blocked_now(settings)),
               context >= cap))
    query = (
        select(ChatSession.id, ChatSession.message_count, ChatSession.active_tokens,
               ChatSession.summary_tokens, ChatSession.normal_blocked,
               ChatSession.normal_blocked_under, ChatSession.overrides)
        .where(or_(and_(ChatSession.overrides.is_(None), due),
                   ChatSession.overrides.isnot(None)),
               lease_free(now),
               or_(ChatSession.enqueued_at.is_(None), ChatSession.enqueued_at <= stale),
               or_(ChatSession.blocked_until.is_(None), ChatSession.blocked_until <= now),
               backoff_over(now))
        .order_by(ChatSession.active_tokens.desc())
    )
    return query.limit(limit) if limit else query


def due_ids(rows: Iterable[Any], settings: Settings) -> list[str]:
    """The ids among ``due_query`` rows whose own settings say the policy could trigger."""
    out = []
    for row in rows:
        tuned = settings
        if row.overrides:
            try:
                tuned = effective(settings, row.overrides)
            except InvalidInput:
                log.warning("session %r has invalid overrides; its job will record why",
                            row.id)
        blocked = row.normal_blocked and row.normal_blocked_under == tuned.thresholds_key()
        if policy.might_trigger(message_count=row.message_count,
                                active_tokens=row.active_tokens,
                                summary_tokens=row.summary_tokens, t=tuned.thresholds(),
                                normal_blocked=blocked):
            out.append(str(row.id))
    return out


def find_due(settings: Settings, *, db: Session, now: datetime, limit: int) -> list[str]:
    """Up to ``limit`` due session ids: those on the global thresholds (decided in
    SQL, biggest first), then those with overrides, paged by id through all of
    them, so no number of not-due override sessions can starve a due one."""
    base = due_query(settings, now=now, limit=None)
    rows = db.execute(base.where(ChatSession.overrides.is_(None)).limit(limit)).all()
    ids = (due_ids(rows, settings) if settings.policy == "adaptive"
           else [str(r.id) for r in rows])
    after: str | None = None
    while len(ids) < limit:
        page = base.where(ChatSession.overrides.isnot(None)).order_by(None) \
            .order_by(ChatSession.id)
        if after is not None:
            page = page.where(ChatSession.id > after)
        rows = db.execute(page.limit(settings.sweep_batch)).all()
        if not rows:
            break
        ids.extend(due_ids(rows, settings)[:limit - len(ids)])
        after = str(rows[-1].id)
    return ids


def claim_due(query: Select[Any], settings: Settings, *, db: Session,
              now: datetime) -> tuple[list[str], list[str]]:
    """(candidate ids, ids due and now marked pending) for one batch of ``query``."""
    rows = db.execute(query).all()
    due = due_ids(rows, settings)
    return ([str(r[0]) for r in rows],
            [sid for sid in due if mark_pending(sid, db=db, now=now, settings=settings)])


def sweep(settings: Settings, *, limit: int | None = None) -> int:
    """Queue up to ``limit`` (default RECAP_SWEEP_BATCH) due sessions; returns how many."""
    with transaction() as s:
        now = db_now(s)  # leases, markers and cool-downs on the database's clock
        due = find_due(settings, db=s, now=now, limit=limit or settings.sweep_batch)
        marked = [sid for sid in due if mark_pending(sid, db=s, now=now, settings=settings)]
    sent = sum(1 for sid in marked if send(sid))
    sweep_titles(settings, now=now, limit=limit or settings.sweep_batch)
    purge_archive(settings, now=now)
    with transaction() as s:  # its own transaction: it never holds a lock during the sweep
        record_heartbeat(SWEEP_HEARTBEAT, db=s, at=utcnow())
    return sent


def record_heartbeat(name: str, *, db: Session, at: datetime) -> None:
    """Set the heartbeats row ``name`` to ``at``."""
    insert_or_update(Heartbeat, {"name": name, "at": at}, db=db, keys=["name"],
                     changes={"at": at})
