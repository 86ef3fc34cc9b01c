"""Store a framework's turn at most once: ``store_turns`` (sync) and
``astore_turns`` (asyncio).

Agent frameworks hand Recap what happened in a step (the user's message, the
model's reply and tool calls, the tools' results). A step can run again (a
retried node, a resumed run, an app that stores the same result twice), so each
message may carry ``keys``: the framework's own ids for what it holds (a
LangChain message id, an Agents SDK item id, a pydantic-ai run position). A key
is claimed in ``stored_keys`` in the same transaction as its message, so:

- a message whose keys are all stored already is skipped, even after a fold has
  deleted the message itself (keys outlive their messages);
- two concurrent stores of one key: the second waits on the first's row, then
  finds it claimed and skips;
- a message without keys is always stored.

The whole batch is one transaction: all of it or, on any error (InvalidInput
naming the message), nothing. The hook is left to the caller (adapters call
``after_reply`` once per model turn).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Delete, Update, delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.sql.dml import ReturningInsert

from recap.api.ingest import add_message, prepare
from recap.api.validate import check_session_id, check_user_id
from recap.db import rowcount, transaction
from recap.errors import InvalidInput
from recap.models import ChatMessage, StoredKey

__all__ = ["Newest", "Stored", "Turn", "astore_turns", "claim_keys", "drop_keys_after", "key_of",
           "link_keys", "newest_messages", "store_turns", "unlink_after"]

# stored_keys.key is VARCHAR(255): longer ids are stored as their digest.
MAX_KEY = 200


@dataclass(frozen=True)
class Turn:
    """One message to store: ``add_message``'s role and content, plus the
    framework ids it holds (empty: always stored)."""

    role: str
    content: str | list[dict[str, Any]]
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stored:
    """What one store did: the ids of the messages written, how many turns were
    skipped as already stored, and whether an assistant turn was written."""

    ids: list[int] = field(default_factory=list)
    skipped: int = 0
    replied: bool = False


def key_of(raw: str) -> str:
    """The stored form of a framework id: itself, or a digest when too long."""
    if len(raw) <= MAX_KEY:
        return raw
    return "sha256:" + hashlib.sha256(raw.encode()).hexdigest()


def claim_keys(dialect: str, session_id: str, keys: Sequence[str]
               ) -> ReturningInsert[Any]:
    """INSERT the keys not stored yet, returning those it inserted (a concurrent
    claim of the same key waits for the first transaction, then inserts nothing)."""
    make = pg_insert if dialect == "postgresql" else sqlite_insert
    return (make(StoredKey).values([{"session_id": session_id, "key": k} for k in keys])
            .on_conflict_do_nothing(index_elements=["session_id", "key"])
            .returning(StoredKey.key))


def link_keys(session_id: str, keys: Sequence[str], message_id: int) -> Update:
    """Point claimed keys at the message that holds them."""
    return (update(StoredKey).where(StoredKey.session_id == session_id,
                                    StoredKey.key.in_(list(keys)))
            .values(message_id=message_id))


def unlink_after(session_id: str, message_id: int) -> Delete:
    """Forget the keys of messages after ``message_id`` (they were rewound): the
    same item may then be stored again."""
    return delete(StoredKey).where(StoredKey.session_id == session_id,
                                   StoredKey.message_id > message_id)


def _checked(session_id: str, turns: Iterable[Turn], user_id: str | None) -> list[Turn]:
    check_session_id(session_id)
    check_user_id(user_id)
    out = list(turns)
    for i, t in enumerate(out):
        if not isinstance(t, Turn):
            raise InvalidInput(f"turn {i} must be a Turn, got {type(t).__name__}")
        try:
            prepare(t.role, t.content, False)
        except InvalidInput as exc:
            raise InvalidInput(f"turn {i} ({t.role}): {exc}") from None
    return out


def store_turns(session_id: str, turns: Iterable[Turn], *,
                user_id: str | None = None) -> Stored:
    """Store ``turns`` in order, in one transaction, skipping those whose keys are
    all stored already. Raises InvalidInput (writing nothing) for a turn Recap
    cannot store."""
    batch = _checked(session_id, turns, user_id)
    ids: list[int] = []
    skipped, replied = 0, False
    if not batch:
        return Stored()
    with transaction() as db:
        dialect = db.get_bind().dialect.name
        for t in batch:
            keys = sorted({key_of(k) for k in t.keys})
            claimed = list(db.scalars(claim_keys(dialect, session_id, keys))) if keys else []
            if keys and not claimed:
                skipped += 1
                continue
            ids.append(add_message(session_id, t.role, t.content, user_id=user_id, db=db))
            if claimed:
                db.execute(link_keys(session_id, claimed, ids[-1]))
            replied = replied or t.role == "assistant"
    return Stored(ids, skipped, replied)


async def astore_turns(session_id: str, turns: Iterable[Turn], *,
                       user_id: str | None = None) -> Stored:
    """:func:`store_turns` on the asyncio API (PostgreSQL; see recap.api.aio)."""
    from recap.api import aio  # the asyncio extra: only for asyncio callers

    batch = _checked(session_id, turns, user_id)
    ids: list[int] = []
    skipped, replied = 0, False
    if not batch:
        return Stored()
    async with aio.transaction() as db:
        for t in batch:
            keys = sorted({key_of(k) for k in t.keys})
            claimed = list(await db.scalars(claim_keys("postgresql", session_id, keys))) \
                if keys else []
            if keys and not claimed:
                skipped += 1
                continue
            ids.append(await aio.add_message(session_id, t.role, t.content, user_id=user_id,
                                             db=db))
            if claimed:
                await db.execute(link_keys(session_id, claimed, ids[-1]))
            replied = replied or t.role == "assistant"
    return Stored(ids, skipped, replied)


@dataclass(frozen=True)
class Newest:
    """One active message, as :func:`newest_messages` reads it."""

    id: int
    role: str
    content: str
    blocks: list[dict[str, Any]] | None


def newest_messages(session_id: str, n: int = 2) -> list[Newest]:
    """The session's ``n`` newest active messages, newest first (an adapter's
    ``pop`` rewinds to the second)."""
    check_session_id(session_id)
    with transaction() as db:
        rows = db.execute(select(ChatMessage.id, ChatMessage.role, ChatMessage.content,
                                 ChatMessage.blocks)
                          .where(ChatMessage.session_id == session_id)
                          .order_by(ChatMessage.id.desc()).limit(n)).all()
    return [Newest(int(r.id), r.role, r.content, r.blocks) for r in rows]


def drop_keys_after(session_id: str, message_id: int) -> int:
    """Delete the keys of messages after ``message_id`` (after a rewind); returns how many."""
    with transaction() as db:
        return rowcount(db.execute(unlink_after(session_id, message_id)))
