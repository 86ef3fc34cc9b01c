"""The sweeper: finds sessions that need work and nobody is handling, and queues them.

Heals lost enqueues, broker outages, expired leases (dead workers) and
dead-lettered sessions once their cool-down has passed. One indexed query on the
counters, bounded by RECAP_SWEEP_BATCH per run.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from sqlalchemy import Select, and_, or_, select

from models import ChatSession
from worker import policy
from worker.db import transaction
from worker.enqueue import mark_pending, send
from worker.service import utcnow
from worker.settings import Settings


def due_query(settings: Settings, *, now: datetime, limit: int | None) -> Select[tuple[str]]:
    """Sessions whose counters say the policy could trigger, free to be queued."""
    cap = math.ceil(policy.CAPACITY_USAGE * settings.context_budget_tokens)
    stale = now - timedelta(seconds=settings.enqueue_stale_s)
    query = (
        select(ChatSession.id)
        .where(or_(and_(ChatSession.message_count > settings.trigger_messages,
                        ChatSession.active_tokens > settings.trigger_tokens,
                        ChatSession.normal_blocked.is_(False)),
                   ChatSession.summary_tokens + ChatSession.active_tokens >= cap),
               or_(ChatSession.lease_token.is_(None), ChatSession.lease_expires_at <= now),
               or_(ChatSession.enqueued_at.is_(None), ChatSession.enqueued_at <= stale),
               or_(ChatSession.blocked_until.is_(None), ChatSession.blocked_until <= now))
        .order_by(ChatSession.active_tokens.desc())
    )
    return query.limit(limit) if limit else query


def sweep(settings: Settings, *, limit: int | None = None) -> int:
    """Queue up to ``limit`` (default RECAP_SWEEP_BATCH) due sessions; returns how many."""
    now = utcnow()
    with transaction() as s:
        ids = list(s.scalars(due_query(settings, now=now, limit=limit or settings.sweep_batch)))
        marked = [sid for sid in ids if mark_pending(s, sid, now=now, settings=settings)]
    return sum(1 for sid in marked if send(sid))
