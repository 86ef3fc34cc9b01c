"""Per-session administration for the chat app and operators: settings overrides
and the memories mined from a session."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from models import ChatSession, Memory
from worker.api.validate import check_session_id
from worker.db import insert_ignoring_duplicates, transaction
from worker.errors import SessionNotFound
from worker.settings import get_settings, validate_overrides


def configure_session(session_id: str, overrides: dict[str, Any] | None, *,
                      db: Session | None = None) -> dict[str, Any] | None:
    """Set (or with None/{} clear) a session's tuning overrides; creates the session.

    Keys are worker.settings.Tuning fields (thresholds, keep window, budget, model,
    prompt); values are validated with the same limits as RECAP_* settings.
    Raises InvalidInput naming the bad key, writing nothing. Returns what was stored.
    """
    check_session_id(session_id)
    stored = validate_overrides(overrides, base=get_settings()) if overrides else None

    def write(s: Session) -> None:
        insert_ignoring_duplicates(ChatSession, [{"id": session_id}], db=s, keys=["id"])
        s.execute(update(ChatSession).where(ChatSession.id == session_id)
                  .values(overrides=stored))

    if db is not None:
        write(db)
    else:
        with transaction() as s:
            write(s)
    return stored


def memories(session_id: str) -> list[dict[str, Any]]:
    """A session's memories, most important first; SessionNotFound if unknown."""
    check_session_id(session_id)
    with transaction() as s:
        if s.get(ChatSession, session_id) is None:
            raise SessionNotFound(f"no chat session with id {session_id!r}")
        rows = s.scalars(select(Memory).where(Memory.session_id == session_id)
                         .order_by(Memory.importance.desc(), Memory.id))
        return [{"fact": m.fact, "category": m.category, "importance": m.importance,
                 "first_message_id": m.first_message_id, "last_message_id": m.last_message_id,
                 "created_at": m.created_at.isoformat() if m.created_at else None}
                for m in rows]
