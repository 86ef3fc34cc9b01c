"""The sweeper: finds sessions that need work and nobody is handling, and queues them.

Heals lost enqueues, broker outages, expired leases (dead workers) and
dead-lettered sessions once their cool-down has passed. One indexed query on the
counters, bounded by RECAP_SWEEP_BATCH per run. Sessions with their own
overrides come back as candidates and are judged in Python with their settings.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, or_, select
from sqlalchemy.orm import Session

from models import ChatSession
from worker.core import policy
from worker.db import transaction, utcnow
from worker.errors import InvalidInput
from worker.jobs.enqueue import mark_pending, send, stale_before
from worker.jobs.titles import sweep_titles
from worker.settings import Settings, effective

log = logging.getLogger("recap.sweeper")


def due_query(settings: Settings, *, now: datetime, limit: int | None) -> Select[Any]:
    """Candidate sessions (id, counters, overrides) free to be queued; pass the rows
    through :func:`due_ids` to judge the ones with overrides."""
    cap = math.ceil(policy.CAPACITY_USAGE * settings.context_budget_tokens)
    stale = stale_before(now, settings)
    query = (
        select(ChatSession.id, ChatSession.message_count, ChatSession.active_tokens,
               ChatSession.summary_tokens, ChatSession.normal_blocked, ChatSession.overrides)
        .where(or_(and_(ChatSession.message_count > settings.trigger_messages,
                        ChatSession.active_tokens > settings.trigger_tokens,
                        ChatSession.normal_blocked.is_(False)),
                   ChatSession.summary_tokens + ChatSession.active_tokens >= cap,
                   ChatSession.overrides.isnot(None)),
               or_(ChatSession.lease_token.is_(None), ChatSession.lease_expires_at <= now),
               or_(ChatSession.enqueued_at.is_(None), ChatSession.enqueued_at <= stale),
               or_(ChatSession.blocked_until.is_(None), ChatSession.blocked_until <= now))
        .order_by(ChatSession.active_tokens.desc())
    )
    return query.limit(limit) if limit else query


def due_ids(rows: Iterable[Any], settings: Settings) -> list[str]:
    """The ids among ``due_query`` rows whose own settings say the policy could trigger."""
    out = []
    for sid, count, active, summary, normal_blocked, overrides in rows:
        tuned = settings
        if overrides:
            try:
                tuned = effective(settings, overrides)
            except InvalidInput:
                log.warning("session %r has invalid overrides; its job will record why", sid)
        if policy.might_trigger(message_count=count, active_tokens=active,
                                summary_tokens=summary, t=tuned.thresholds(),
                                normal_blocked=normal_blocked):
            out.append(str(sid))
    return out


def claim_due(query: Select[Any], settings: Settings, *, db: Session,
              now: datetime) -> tuple[list[str], list[str]]:
    """(candidate ids, ids due and now marked pending) for one batch of ``query``."""
    rows = db.execute(query).all()
    due = due_ids(rows, settings)
    return ([str(r[0]) for r in rows],
            [sid for sid in due if mark_pending(sid, db=db, now=now, settings=settings)])


def sweep(settings: Settings, *, limit: int | None = None) -> int:
    """Queue up to ``limit`` (default RECAP_SWEEP_BATCH) due sessions; returns how many."""
    now = utcnow()
    with transaction() as s:
        _, marked = claim_due(due_query(settings, now=now, limit=limit or settings.sweep_batch),
                              settings, db=s, now=now)
    sent = sum(1 for sid in marked if send(sid))
    sweep_titles(settings, now=now, limit=limit or settings.sweep_batch)
    return sent
