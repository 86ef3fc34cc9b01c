"""Queueing summarize jobs with coalescing: at most one pending job per session.

``chat_sessions.enqueued_at`` marks a queued job that has not started yet; the
job clears it when it claims the session. A marker older than
RECAP_ENQUEUE_STALE_S is treated as lost (the sweeper queues again).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, update
from sqlalchemy.orm import Session

from models import ChatSession
from worker.db import transaction
from worker.settings import Settings

log = logging.getLogger("recap.enqueue")


def mark_pending(session: Session | Connection, session_id: str, *, now: datetime,
                 settings: Settings) -> bool:
    """Set the pending marker unless a live one exists; True if the caller should send."""
    stale = now - timedelta(seconds=settings.enqueue_stale_s)
    result = session.execute(
        update(ChatSession)
        .where(ChatSession.id == session_id,
               ChatSession.enqueued_at.is_(None) | (ChatSession.enqueued_at <= stale))
        .values(enqueued_at=now))
    return result.rowcount == 1  # type: ignore[attr-defined]


def send(session_id: str, *, task_id: str | None = None) -> bool:
    """Publish one summarize job; see :func:`publish`."""
    from worker.tasks import summarize_session

    return publish(summarize_session, session_id, marker=ChatSession.enqueued_at,
                   task_id=task_id)


def publish(task: Any, session_id: str, *, marker: Any, task_id: str | None = None) -> bool:
    """Publish one job of ``task`` for a session. Never raises: on a broker failure
    it logs once, clears the session's pending ``marker`` column so the sweeper
    retries, and returns False."""
    try:
        # No publish retries: this runs on the chat app's reply path.
        task.apply_async((session_id,), retry=False, task_id=task_id)
        return True
    except Exception as exc:
        log.warning("could not enqueue %s for session %r (%s: %s); the sweeper will retry",
                    task.name, session_id, type(exc).__name__, exc)
    try:
        with transaction() as s:
            s.execute(update(ChatSession).where(ChatSession.id == session_id)
                      .values({marker: None}))
    except Exception as exc:
        log.warning("could not clear the pending marker of session %r (%s)", session_id,
                    type(exc).__name__)
    return False
