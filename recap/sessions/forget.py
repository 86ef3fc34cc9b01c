"""``recap.forget``: erase everything stored about one session or one user, in
one transaction.

What goes, per session (a user's: every session that names the user): its
messages (chat_messages, archived_messages), the session row (summary, title,
settings), its memories (the session's or user's scope, and those of the
user's scope that no other session also stated: a memory goes with its last
source), the framework ids its adapters stored (stored_keys), the HTTP API's
Idempotency-Key answers for it (idempotency_keys), and its audit rows
(summary_runs, title_runs). Audit rows are deleted,
not scrubbed: their reasons and errors may quote chat text, and a row kept
without them would still name the session. ``recap stats`` and ``recap
failures`` then count without them, which is what erasure means; the invariant
(docs/RELIABILITY.md) holds for every other session, since each session's runs
and counters go together.

Fenced against running jobs: the session rows are locked first (FOR UPDATE), so
an apply that is mid-transaction finishes before the erasure reads anything,
and one that comes later finds no session row, raises Superseded and changes
nothing; its failure record is written only while the session exists
(recap.store.rows.session_exists), so it cannot bring the id back. A job
already queued for a forgotten session that starts afterwards records one
``skipped: not found`` row naming only the id, as for any unknown id; forget is
idempotent, so forgetting again removes it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, delete, select
from sqlalchemy.orm import Session

from recap.api.validate import check_user_id
from recap.core.tenant import current_tenant
from recap.core.validate import check_session_id
from recap.db import rowcount, transaction
from recap.errors import InvalidInput
from recap.models import (
    SOURCE_KINDS,
    ArchivedMessage,
    ChatMessage,
    ChatSession,
    IdempotencyKey,
    Memory,
    MemorySource,
    StoredKey,
    SummaryRun,
    TitleRun,
)
from recap.store.fence import lock_for_erase
from recap.store.sources import drop_sources, drop_unsourced


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
        check_user_id(user_id)
        owned = _in_tenant(ChatSession.user_id == user_id)
        scope = f"u:{user_id}"
    with transaction() as s:
        # Lock first: a job's apply holding a session row finishes (its rows are
        # then seen and deleted); one that comes later waits, then finds no row.
        ids = lock_for_erase(owned, db=s)
        if session_id is not None:
            ids = [session_id]  # also its audit rows if the session row is already gone
        return erase(s, ids, [scope, *(f"s:{sid}" for sid in ids)])


# What goes with a kind of source when it is forgotten: a memory the model said the
# user stated and Recap could not find in their words (``unverified``) is derived
# from what the user said, so forgetting the user's statements forgets it too.
DERIVED: dict[str, tuple[str, ...]] = {"user": ("unverified",)}


def forget_memories(*, source: str, session_id: str | None = None,
                    user_id: str | None = None) -> int:
    """Drop what ``session_id`` (or every session of ``user_id``: exactly one) stated
    as ``source`` (a kind of recap.models.SOURCE_KINDS: ``tool``, ``document``,
    ``guard``...), in one transaction; returns the memories deleted. A memory goes
    when its last source goes: one another session (or another kind) also stated
    stays. Messages, summaries and other memories are untouched. ``user`` also
    drops what was derived from the user's statements (:data:`DERIVED`): the
    ``unverified`` paraphrases the model attributed to the user.

    Raises InvalidInput for an unknown kind, neither or both ids, or an unusable id.
    """
    if source not in SOURCE_KINDS:
        raise InvalidInput(f"unknown memory source {source!r}; expected one of "
                           f"{', '.join(SOURCE_KINDS)}")
    if (session_id is None) == (user_id is None):
        raise InvalidInput("forget_memories needs exactly one of session_id or user_id")
    with transaction() as s:
        if session_id is not None:
            ids = [check_session_id(session_id)]
        else:
            check_user_id(user_id)
            ids = list(s.scalars(select(ChatSession.id).where(
                _in_tenant(ChatSession.user_id == user_id))))
        kinds = (source, *DERIVED.get(source, ()))
        return drop_sources(MemorySource.session_id.in_(ids) & MemorySource.kind.in_(kinds),
                            db=s)


def _in_tenant(where: ColumnElement[bool]) -> ColumnElement[bool]:
    """``where``, limited to the current tenant's sessions (recap.core.tenant)."""
    name = current_tenant()
    return where if name is None else where & ChatSession.id.startswith(name + "/",
                                                                        autoescape=True)


def erase(s: Session, ids: list[str], scopes: list[str]) -> dict[str, int]:
    """The deletes of :func:`forget` for the sessions ``ids`` and the memory
    ``scopes``, inside the caller's transaction; rows deleted per table.

    The scopes' memories go; a memory of another scope (the user's, for one
    session) goes when these sessions were its last sources: one that another
    session also stated stays (recap.store.sources)."""
    counts = {"memories": _delete(s, Memory, Memory.scope.in_(scopes))}
    counts["memories"] += drop_sources(MemorySource.session_id.in_(ids), db=s)
    counts["memories"] += drop_unsourced(Memory.session_id.in_(ids), db=s)
    for model in (ArchivedMessage, ChatMessage, SummaryRun, TitleRun, StoredKey,
                  IdempotencyKey):
        counts[model.__tablename__] = _delete(s, model, model.session_id.in_(ids))
    counts["chat_sessions"] = _delete(s, ChatSession, ChatSession.id.in_(ids))
    return counts


def _delete(s: Session, model: Any, where: ColumnElement[bool]) -> int:
    return rowcount(s.execute(delete(model).where(where)))
