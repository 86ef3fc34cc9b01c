"""Per-session administration for the chat app and operators: settings overrides,
the session's user, and the memories it can see."""

from __future__ import annotations

from collections.abc import Iterable
from types import EllipsisType
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from recap.api.ingest import raise_other_user
from recap.api.validate import check_session_id, check_user_id
from recap.db import insert_ignoring_duplicates, rowcount, transaction
from recap.errors import SessionNotFound
from recap.models import SOURCE_KINDS, ChatSession, Memory
from recap.settings import check_policy_fit, get_settings, validate_overrides
from recap.store.recall import SHOWN_KINDS, session_scopes
from recap.store.sentences import plain_fact
from recap.store.sources import memory_sources


def configure_session(session_id: str,
                      overrides: dict[str, Any] | None | EllipsisType = ..., *,
                      user_id: str | None = None,
                      db: Session | None = None) -> dict[str, Any] | None:
    """Set (or with None/{} clear) a session's tuning overrides, and/or its user;
    creates the session. Returns the overrides stored (None if cleared or unset).

    Keys are recap.settings.Tuning fields (thresholds, keep window, budget, model,
    prompt); values are validated with the same limits as RECAP_* settings.
    ``overrides`` left out (``...``) keeps the stored ones. ``user_id`` sets the
    session's user (as ``add_message(..., user_id=...)`` does): memories are then
    the user's. Raises InvalidInput naming the bad key (a key the session's policy
    ignores too: trigger_messages under the adaptive policy), or both users if the
    session belongs to another one, writing nothing.
    """
    check_session_id(session_id)
    check_user_id(user_id)
    keep = isinstance(overrides, EllipsisType)
    if overrides and isinstance(overrides, dict):
        check_policy_fit(overrides, base=get_settings())  # first: the more useful error
    stored = (validate_overrides(overrides, base=get_settings())
              if overrides and not isinstance(overrides, EllipsisType) else None)

    def write(s: Session) -> dict[str, Any] | None:
        insert_ignoring_duplicates(ChatSession, [{"id": session_id, "user_id": user_id}],
                                   db=s, keys=["id"])
        if user_id is not None and not rowcount(s.execute(
                update(ChatSession).where(ChatSession.id == session_id,
                                          ChatSession.user_id.is_(None)
                                          | (ChatSession.user_id == user_id))
                .values(user_id=user_id))):
            raise_other_user(s, session_id, user_id)
        if keep:
            return s.scalar(select(ChatSession.overrides).where(ChatSession.id == session_id))
        # New settings may make a session the sweeper was backing off condensable.
        s.execute(update(ChatSession).where(ChatSession.id == session_id)
                  .values(overrides=stored, noop_backoff_until=None))
        return stored

    if db is not None:
        return write(db)
    with transaction() as s:
        return write(s)


def memories(session_id: str) -> list[dict[str, Any]]:
    """The live memories a session's context can show (its user's when it names
    one, and its own), most important first, each fact once; SessionNotFound if
    unknown. See :func:`listed_memories`."""
    check_session_id(session_id)
    with transaction() as s:
        if s.get(ChatSession, session_id) is None:
            raise SessionNotFound(f"no chat session with id {session_id!r}")
        return listed_memories(session_id, db=s)


def listed_memories(session_id: str, *, db: Session) -> list[dict[str, Any]]:
    """:func:`memories` in the caller's transaction. Each fact is listed once: rows
    stating one sentence (the retention guard keeps a sentence once per specific
    in it, ``specific: sentence``: recap.store.sentences) are one entry showing the
    sentence, ``ids`` every row of it. ``kind`` is who stated it, the strongest of
    its sources (:data:`KIND_ORDER`); ``sources`` lists every batch that stated it
    (session, kind, message range, run); ``session_id`` is its oldest source's."""
    scopes = session_scopes(session_id, db=db)
    found = list(db.scalars(select(Memory).where(Memory.scope.in_(scopes),
                                                 Memory.superseded_by.is_(None))
                            .order_by(Memory.importance.desc(), Memory.id)))
    sources = memory_sources([m.id for m in found], db=db)
    listed: dict[str, dict[str, Any]] = {}
    for m in found:
        text = plain_fact(m.fact)
        entry = listed.get(text)
        if entry is None:
            entry = listed[text] = {
                "id": m.id, "fact": text, "category": m.category, "importance": m.importance,
                "session_id": m.session_id, "first_message_id": m.first_message_id,
                "last_message_id": m.last_message_id,
                "created_at": m.created_at.isoformat() if m.created_at else None,
                "ids": [], "sources": []}
        entry["ids"].append(m.id)
        entry["sources"] += [x for x in sources.get(m.id, []) if x not in entry["sources"]]
    return [{**e, "kind": strongest_kind(x["kind"] for x in e["sources"])}
            for e in listed.values()]


# Who stated a memory, strongest first: the order the context's memories block
# shows them in (recap.store.recall.SHOWN_KINDS), then the kinds it shows as kept
# lines. A memory without source rows predates provenance: legacy.
KIND_ORDER = (*SHOWN_KINDS, *(k for k in SOURCE_KINDS if k not in SHOWN_KINDS))


def strongest_kind(kinds: Iterable[str]) -> str:
    """The strongest of ``kinds`` in :data:`KIND_ORDER` (``legacy`` if there is none)."""
    return min(kinds, key=KIND_ORDER.index, default="legacy")
