"""``worker.forget``: erase everything stored about one session or one user, in
one transaction.

What goes, per session (a user's: every session that names the user): its
messages (chat_messages, archived_messages), the session row (summary, title,
settings), its memories (those mined from it, and the session's or user's
scope), the framework ids its adapters stored (stored_keys), and its audit rows
(summary_runs, title_runs). Audit rows are deleted,
not scrubbed: their reasons and errors may quote chat text, and a row kept
without them would still name the session. ``recap stats`` and ``recap
failures`` then count without them, which is what erasure means; the invariant
(worker/checks.py) holds for every other session, since each session's runs
and counters go together.

Fenced against running jobs: the session rows are locked first (FOR UPDATE), so
an apply that is mid-transaction finishes before the erasure reads anything,
and one that comes later finds no session row, raises Superseded and changes
nothing; its failure record is written only while the session exists
(worker.store.rows.session_exists), so it cannot bring the id back. A job
already queued for a forgotten session that starts afterwards records one
``skipped: not found`` row naming only the id, as for any unknown id; forget is
idempotent, so forgetting again removes it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, delete, or_, select
from sqlalchemy.orm import Session

from models import (
    ArchivedMessage,
    ChatMessage,
    ChatSession,
    Memory,
    StoredKey,
    SummaryRun,
    TitleRun,
)
from worker.core.validate import MAX_SESSION_ID, check_session_id, check_str
from worker.db import rowcount, transaction
from worker.errors import InvalidInput

# The tables erased, in the order of the deletes.
TABLES = ("memories", "archived_messages", "chat_messages", "summary_runs", "title_runs",
          "stored_keys", "chat_sessions")


def forget(*, session_id: str | None = None, user_id: str | None = None) -> dict[str, int]:
    """Erase everything stored about ``session_id`` or about ``user_id`` (exactly one)
    in one transaction; returns the rows deleted per table (all 0 if nothing was
    stored, so it is safe to repeat).

    Raises InvalidInput if neither or both are given, or an id is not usable.
    """
    if (session_id is None) == (user_id is None):
        raise InvalidInput("forget needs exactly one of session_id or user_id")
    if session_id is not None:
        check_session_id(session_id)
        owned: ColumnElement[bool] = ChatSession.id == session_id
        scope = f"s:{session_id}"
    else:
        check_str(user_id, "user_id", max_chars=MAX_SESSION_ID)
        owned = ChatSession.user_id == user_id
        scope = f"u:{user_id}"
    with transaction() as s:
        # Lock first: a job's apply holding a session row finishes (its rows are
        # then seen and deleted); one that comes later waits, then finds no row.
        ids = list(s.scalars(select(ChatSession.id).where(owned).with_for_update()))
        if session_id is not None:
            ids = [session_id]  # also its audit rows if the session row is already gone
        return erase(s, ids, [scope, *(f"s:{sid}" for sid in ids)])


def erase(s: Session, ids: list[str], scopes: list[str]) -> dict[str, int]:
    """The deletes of :func:`forget` for the sessions ``ids`` and the memory
    ``scopes``, inside the caller's transaction; rows deleted per table."""
    counts = {"memories": _delete(s, Memory, or_(Memory.session_id.in_(ids),
                                                 Memory.scope.in_(scopes)))}
    for model in (ArchivedMessage, ChatMessage, SummaryRun, TitleRun, StoredKey):
        counts[model.__tablename__] = _delete(s, model, model.session_id.in_(ids))
    counts["chat_sessions"] = _delete(s, ChatSession, ChatSession.id.in_(ids))
    return counts


def _delete(s: Session, model: Any, where: ColumnElement[bool]) -> int:
    return rowcount(s.execute(delete(model).where(where)))
