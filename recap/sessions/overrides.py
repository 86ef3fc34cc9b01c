"""Per-session administration for the chat app and operators: settings overrides,
the session's user, and the memories it can see."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from types import EllipsisType
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from recap.api.ingest import raise_other_user
from recap.api.validate import check_session_id, check_user_id
from recap.core.known_models import unknown_model_warning
from recap.db import insert_ignoring_duplicates, rowcount, transaction
from recap.errors import InvalidInput, SessionNotFound, UnknownModelWarning
from recap.models import SOURCE_KINDS, ChatSession, Memory
from recap.settings import check_policy_fit, get_settings, validate_overrides
from recap.store.recall import SHOWN_KINDS, session_scopes
from recap.store.sentences import plain_fact
from recap.store.sources import memory_sources


def configure_session(session_id: str,
                      overrides: Mapping[str, Any] | None | EllipsisType = ..., *,
                      user_id: str | None = None, replace: bool = False,
                      create: bool = False,
                      db: Session | None = None) -> dict[str, Any] | None:
    """Change a session's tuning overrides and/or its user. Returns the overrides
    stored (None if there are none).

    ``overrides`` is merged into the stored ones: each key given is set, a key given
    as None removes that override, the others stay. With ``replace=True`` it
    replaces them all; None clears them all; left out (``...``) keeps them. Keys are
    recap.settings.Tuning fields (thresholds, keep window, budget, model, prompt);
    the result is validated as a whole with the same limits as RECAP_* settings.
    ``user_id`` sets the session's user (as ``add_message(..., user_id=...)``
    does): memories are then the user's.

    Raises SessionNotFound for a session never stored, unless ``create=True``
    (which stores it). Raises InvalidInput naming the bad key (a key the session's
    policy ignores too: trigger_messages under the adaptive policy), or both users
    if the session belongs to another one, writing nothing. A ``model`` outside
    recap.core.known_models.KNOWN_MODELS is stored with an UnknownModelWarning
    naming the nearest known model.
    """
    stored = store_overrides(session_id, overrides, user_id=user_id, replace=replace,
                             create=create, db=db)
    warning = model_warning(overrides)  # once stored: a refused model needs no warning
    if warning is not None:
        warnings.warn(UnknownModelWarning(warning), stacklevel=2)
    return stored


def model_warning(overrides: object) -> str | None:
    """The warning for an unknown ``model`` among ``overrides`` (None: none to give)."""
    model = overrides.get("model") if isinstance(overrides, Mapping) else None
    if not isinstance(model, str) or not model.strip():
        return None  # no model given, or one validation refuses
    return unknown_model_warning(model)


def merged_overrides(stored: Mapping[str, Any] | None,
                     given: Mapping[str, Any] | None, *, replace: bool) -> dict[str, Any]:
    """The overrides to validate and store: ``given`` over ``stored`` (None removes a
    key), or ``given`` alone with ``replace``. Pure."""
    out = {} if replace or given is None else dict(stored or {})
    for key, value in (given or {}).items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def store_overrides(session_id: str,
                    overrides: Mapping[str, Any] | None | EllipsisType = ..., *,
                    user_id: str | None = None, replace: bool = False,
                    create: bool = False,
                    db: Session | None = None) -> dict[str, Any] | None:
    """:func:`configure_session` without the warning (the CLI and the HTTP API give
    it their own way): one transaction, the session's row locked while its
    overrides are merged."""
    check_session_id(session_id)
    check_user_id(user_id)
    if overrides is not None and not isinstance(overrides, Mapping | EllipsisType):
        raise InvalidInput(f"session settings must be an object, got "
                           f"{type(overrides).__name__}")

    def write(s: Session) -> dict[str, Any] | None:
        if create:
            insert_ignoring_duplicates(ChatSession, [{"id": session_id, "user_id": user_id}],
                                       db=s, keys=["id"])
        found = s.execute(select(ChatSession.id, ChatSession.overrides)
                          .where(ChatSession.id == session_id).with_for_update()).first()
        if found is None:
            raise SessionNotFound(f"no chat session with id {session_id!r}")
        if user_id is not None and not rowcount(s.execute(
                update(ChatSession).where(ChatSession.id == session_id,
                                          ChatSession.user_id.is_(None)
                                          | (ChatSession.user_id == user_id))
                .values(user_id=user_id))):
            raise_other_user(s, session_id, user_id)
        if isinstance(overrides, EllipsisType):
            return found.overrides or None
        stored = checked_overrides(merged_overrides(found.overrides, overrides,
                                                    replace=replace))
        # New settings may make a session the sweeper was backing off condensable.
        s.execute(update(ChatSession).where(ChatSession.id == session_id)
                  .values(overrides=stored, noop_backoff_until=None))
        return stored

    if db is not None:
        return write(db)
    with transaction() as s:
        return write(s)


def checked_overrides(merged: dict[str, Any]) -> dict[str, Any] | None:
    """``merged`` validated as the session's whole set of overrides (InvalidInput
    naming the bad key); None for none."""
    if not merged:
        return None
    check_policy_fit(merged, base=get_settings())  # first: the more useful error
    return validate_overrides(merged, base=get_settings())


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
