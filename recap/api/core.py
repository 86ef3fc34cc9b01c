"""The reply core: what ``add_message``, ``after_reply`` and ``build_context``
decide and which statements they run, written once, with no I/O (``after_reply``'s
half is :mod:`recap.api.hook`, ``build_context``'s :mod:`recap.api.window`).

Functions here build statements and decide from rows already read; they never
open a connection, wait or publish. Two drivers execute them: the sync API
(:mod:`recap.api.ingest`, :mod:`recap.api.context`) and the asyncio API
(:mod:`recap.api.aio`). A change to the reply path is made here, once.

- ``add_message``: :func:`validate_message` -> :class:`NewMessage` ->
  :func:`add_statement` with :meth:`NewMessage.params` (no row back: the session
  belongs to another user, :func:`owner_query` -> :func:`other_user`).
- ``after_reply`` (:mod:`recap.api.hook`): ``counters_statement`` with
  ``counters_params`` -> ``plan_counters`` (the marker updates to run) -> a job is
  sent for each update that changed a row.
- ``build_context`` (:mod:`recap.api.window`): ``snapshot_query`` ->
  ``window_of`` -> ``memories_queries`` / ``with_memories`` -> ``assemble_window``.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Boolean,
    DateTime,
    Executable,
    Integer,
    Select,
    String,
    Text,
    bindparam,
    cast,
    func,
    insert,
    literal_column,
    select,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from recap.api.spend import ONE, REPLY_ROLE, spend_changes
from recap.core.content.message import MAX_CONTENT_CHARS, Message, prepare_content
from recap.core.spend import CACHE_TTL_S
from recap.core.tenant import user_in_scope
from recap.core.validate import MAX_SESSION_ID, check_session_id, check_str
from recap.errors import InvalidInput
from recap.models import ROLES, messages_table, sessions_table

SESSIONS = sessions_table
MESSAGES = messages_table

# -- add_message ---------------------------------------------------------------------


def check_message(role: object, content: object, pinned: object) -> None:
    """Raise InvalidInput naming the problem unless the (string) message can be stored."""
    _check_role(role)
    check_str(content, "content", max_chars=MAX_CONTENT_CHARS)
    _check_pinned(pinned)


def prepare_message(role: object, content: object, pinned: object, *,
                    max_inline_chars: int) -> Message:
    """The message to store, from a string or a Messages API content array (see
    :func:`recap.core.content.message.prepare_content`). Raises InvalidInput."""
    _check_role(role)
    _check_pinned(pinned)
    assert isinstance(role, str)
    return prepare_content(role, content, max_inline_chars=max_inline_chars)


def _check_role(role: object) -> None:
    if role not in ROLES:
        raise InvalidInput(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")


def _check_pinned(pinned: object) -> None:
    if not isinstance(pinned, bool):
        raise InvalidInput(f"pinned must be a bool, got {type(pinned).__name__}")


def check_user_id(user_id: object) -> str | None:
    """Return ``user_id`` if it is None or a usable id (validated like session ids),
    else raise InvalidInput; raise UserNotFound if it is outside the current tenant."""
    if user_id is None:
        return None
    checked = check_str(user_id, "user_id", max_chars=MAX_SESSION_ID)
    user_in_scope(checked)
    return checked



@dataclass(frozen=True)
class NewMessage:
    """A validated message to insert, with its stored token count."""

    session_id: str
    role: str
    message: Message
    tokens: int
    pinned: bool = False
    user_id: str | None = None

    @property
    def reply(self) -> bool:
        """Whether it is a reply (one Claude call's answer, which the spend accounts)."""
        return self.role == REPLY_ROLE

    def statement(self) -> Executable:
        """:func:`add_statement` for this kind of message."""
        return add_statement(reply=self.reply)

    def params(self, now: datetime) -> dict[str, object]:
        """The bound values of :meth:`statement`, the blocks as JSON text (made
        here, so a caller can make them off its event loop)."""
        blocks = self.message.blocks
        return {"session_id": self.session_id, "role": self.role,
                "content": self.message.content, "pinned": self.pinned, "tokens": self.tokens,
                "now": now, "user_id": self.user_id,
                "blocks": None if blocks is None else blocks_json(blocks),
                "tool_links": self.message.tool_links, **self.spend_params(now)}

    def spend_params(self, now: datetime) -> dict[str, Any]:
        """The bound values of :func:`recap.api.spend.spend_changes` (a reply's:
        since when a cached prefix is still alive)."""
        return {"cache_after": now - timedelta(seconds=CACHE_TTL_S)} if self.reply else {}


def blocks_json(blocks: list[dict[str, Any]]) -> str:
    """``blocks`` as JSON text, one block at a time: a single ``json.dumps`` over
    thousands of blocks is one C call that holds the GIL throughout, and the
    asyncio API makes this text in a thread beside the app's event loop."""
    return "[" + ", ".join(map(json.dumps, blocks)) + "]"


# Block JSON is decoded in pieces of about this many characters (:func:`load_blocks`).
BLOCKS_PIECE_CHARS = 64 * 1024
_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def load_blocks(text: str) -> list[dict[str, Any]]:
    """The stored blocks (a JSON array) as a list, decoded in pieces of a few dozen
    blocks, like :func:`blocks_json`: one ``json.loads`` over thousands of blocks
    holds the GIL throughout, and the asyncio API's ``build_context`` reads the
    window in a thread beside the app's event loop. Raises ValueError for text
    that is not a JSON array."""
    if len(text) <= BLOCKS_PIECE_CHARS:
        return _array(json.loads(text))
    at = _skip_space(text, 0)
    if text[at:at + 1] != "[":
        raise ValueError("stored blocks are not a JSON array")
    at += 1
    blocks: list[dict[str, Any]] = []
    while True:
        # Cut before a block that starts past the piece's length. A cut that falls
        # inside a block (in a string, or between nested blocks) leaves a string or
        # a bracket open, so its piece fails to parse: the piece is then taken one
        # block at a time. Each character is decoded at most twice.
        cut = text.find(", {", at + BLOCKS_PIECE_CHARS)
        if cut == -1:
            return blocks + _array(json.loads("[" + text[at:]))
        try:
            blocks += _array(json.loads("[" + text[at:cut] + "]"))
        except ValueError:
            while at < cut:
                block, at = _DECODER.raw_decode(text, _skip_space(text, at))
                blocks.append(block)
                at = _skip_space(text, at)
                if text[at:at + 1] == "]" and _skip_space(text, at + 1) == len(text):
                    return blocks  # the cut was inside the last block
                if text[at:at + 1] != ",":
                    raise ValueError(f"stored blocks: expected ',' or ']' at character {at}"
                                     ) from None
                at += 1
            continue
        at = cut + 1


def _array(loaded: Any) -> list[dict[str, Any]]:
    if not isinstance(loaded, list):
        raise ValueError("stored blocks are not a JSON array")
    return loaded


def _skip_space(text: str, at: int) -> int:
    match = _SPACE.match(text, at)  # always matches, if only the empty string
    return match.end() if match else at


def validate_message(session_id: object, role: object, content: object, *, pinned: object,
                     user_id: object, max_inline_chars: int) -> Message:
    """The message to store, or InvalidInput naming the problem (nothing is written)."""
    check_session_id(session_id)
    msg = prepare_message(role, content, pinned, max_inline_chars=max_inline_chars)
    check_user_id(user_id)
    return msg


def inline_defaults(table: Any, given: dict[str, Any]) -> dict[str, Any]:
    """The scalar Python-side defaults of ``table``'s columns not in ``given``, as
    SQL literals: otherwise each one is a parameter filled on every execution."""
    out: dict[str, Any] = {}
    for column in table.c:
        default = column.default
        if column.name in given or default is None or not getattr(default, "is_scalar", False):
            continue
        value = default.arg
        if isinstance(value, bool):
            out[column.name] = literal_column("true" if value else "false", Boolean)
        elif isinstance(value, int):
            out[column.name] = literal_column(str(int(value)), column.type)
    return out


@functools.cache
def add_statement(*, reply: bool) -> Executable:
    """PostgreSQL: the session upsert and the message INSERT as one statement (one
    round trip), built once with bound parameters (:meth:`NewMessage.params`).

    The session upsert (which locks the session row) runs in a CTE that the
    message INSERT selects from, so the message's id is drawn after the lock is
    held: concurrent writers of one session still commit in id order. A session
    of another user than ``user_id`` is left alone (the upsert's WHERE): the CTE
    is then empty, so is the INSERT, and the statement returns no row.
    """
    user = cast(bindparam("user_id", type_=String), String)
    now = bindparam("now", type_=DateTime(timezone=True))
    tokens = bindparam("tokens", type_=Integer)
    given = {"id": bindparam("session_id", type_=String), "message_count": ONE,
             "active_tokens": tokens, "history_tokens": tokens, "user_id": user}
    upserted = (pg_insert(SESSIONS)
                .values(**given, **inline_defaults(SESSIONS, given))
                .on_conflict_do_update(index_elements=["id"], set_={
                    "message_count": SESSIONS.c.message_count + ONE,
                    "active_tokens": SESSIONS.c.active_tokens + tokens,
                    "updated_at": now,
                    "user_id": func.coalesce(SESSIONS.c.user_id, user),
                    # The reply's requests, accounted in the same statement.
                    **spend_changes(reply=reply, tokens=tokens,
                                    now=now, cache_after=bindparam(
                                        "cache_after", type_=DateTime(timezone=True)))},
                    where=user.is_(None) | SESSIONS.c.user_id.is_(None)
                    | (SESSIONS.c.user_id == user))
                .returning(SESSIONS.c.id).cte("upserted"))
    return (insert(MESSAGES)
            .from_select(["session_id", "role", "content", "token_count", "pinned", "blocks",
                          "tool_links"],
                         select(upserted.c.id, bindparam("role", type_=String),
                                bindparam("content", type_=Text),
                                bindparam("tokens", type_=Integer),
                                bindparam("pinned", type_=Boolean),
                                # JSON text (NewMessage.params), read as jsonb here
                                cast(bindparam("blocks", type_=Text), JSONB),
                                bindparam("tool_links", type_=Text)))
            .returning(MESSAGES.c.id))


def owner_query(session_id: str) -> Select[tuple[str | None]]:
    """The user a session belongs to (read after :func:`add_statement` refused)."""
    return select(SESSIONS.c.user_id).where(SESSIONS.c.id == session_id)


def other_user(session_id: str, owner: object, user_id: str) -> InvalidInput:
    """The error for a message to ``session_id`` (``owner``'s) under another ``user_id``."""
    return InvalidInput(f"session {session_id!r} belongs to user {owner!r}, not {user_id!r}; "
                        "a session's user_id cannot change")
