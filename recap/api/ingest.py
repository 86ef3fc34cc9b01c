"""The chat app's entry points: ``add_message`` and the ``after_reply`` hook (the
sync driver of the reply core, :mod:`recap.api.core`).

Both are on the chat app's reply path, so they do as little as possible:
``add_message`` is one statement on PostgreSQL (the session upsert and the INSERT,
committed by itself); ``after_reply`` reads the session's counters (one
primary-key lookup, no transaction around it) and only when the policy could
trigger marks the session pending and queues one job.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, NoReturn

from sqlalchemy import Connection, func, insert, literal
from sqlalchemy.orm import Session

from recap.api.core import (
    MESSAGES,
    SESSIONS,
    NewMessage,
    other_user,
    owner_query,
    validate_message,
)
from recap.api.hook import counters_params, counters_statement, plan_counters
from recap.api.spend import spend_changes
from recap.api.validate import check_session_id, prepare_message
from recap.core.content.message import Message
from recap.core.spend import CACHE_TTL_S
from recap.db import autocommit_connection, insert_or_update, rowcount, utcnow
from recap.llm.tokens import message_tokens
from recap.models.tables import Timestamp
from recap.settings import get_settings
from recap.store.enqueue import (
    BREAKER,
    ReplyJobs,
    send_after_commit,
    send_both,
)

__all__ = ["add_message", "after_reply", "hook_failed", "insert_message", "prepare",
           "raise_other_user", "reply_jobs"]

log = logging.getLogger("recap.ingest")


def insert_message(s: Session | Connection, new: NewMessage) -> int:
    """Run the INSERT of ``new`` (and its session's upsert) on ``s``; its id."""
    if _dialect(s) == "postgresql":
        added = s.execute(new.statement(), new.params(utcnow())).scalar()
        if added is None:  # the upsert's WHERE refused: another user's session
            raise_other_user(s, new.session_id, new.user_id or "")
        return int(added)
    # Session and counters first, in one statement: it locks the session row, so
    # concurrent writers of one session commit in id order and the counters stay exact.
    session_id, user_id, tokens = new.session_id, new.user_id, new.tokens
    now = utcnow()
    cache_after = now - timedelta(seconds=CACHE_TTL_S)
    changes = {"message_count": SESSIONS.c.message_count + 1,
               "active_tokens": SESSIONS.c.active_tokens + tokens, "updated_at": now,
               **spend_changes(reply=new.reply, tokens=tokens,
                               now=literal(now, Timestamp),
                               cache_after=literal(cache_after, Timestamp))}
    if user_id is None:
        insert_or_update(SESSIONS, {"id": session_id, "message_count": 1,
                                    "active_tokens": tokens, "history_tokens": tokens},
                         db=s, keys=["id"], changes=changes)
    elif not insert_or_update(
            SESSIONS, {"id": session_id, "message_count": 1, "active_tokens": tokens,
                       "history_tokens": tokens, "user_id": user_id}, db=s, keys=["id"],
            changes={**changes, "user_id": func.coalesce(SESSIONS.c.user_id, user_id)},
            # A session belongs to one user: another user's id writes nothing.
            where=SESSIONS.c.user_id.is_(None) | (SESSIONS.c.user_id == user_id)):
        raise_other_user(s, session_id, user_id)
    msg = new.message
    return int(s.execute(insert(MESSAGES).values(
        session_id=session_id, role=new.role, content=msg.content, token_count=tokens,
        pinned=new.pinned,
        **({"blocks": msg.blocks, "tool_links": msg.tool_links} if msg.blocks else {}))
        .returning(MESSAGES.c.id)).scalar_one())


def raise_other_user(s: Session | Connection, session_id: str, user_id: str) -> NoReturn:
    """Raise InvalidInput: ``session_id`` belongs to another user than ``user_id``."""
    raise other_user(session_id, s.execute(owner_query(session_id)).scalar(), user_id)


def prepare(role: object, content: object, pinned: object) -> Message:
    """:func:`recap.api.validate.prepare_message` under the settings' inline cap."""
    return prepare_message(role, content, pinned,
                           max_inline_chars=get_settings().max_inline_base64_chars)


def _dialect(s: Session | Connection) -> str:
    return (s.get_bind() if isinstance(s, Session) else s).dialect.name


def add_message(session_id: str, role: str, content: str | list[dict[str, Any]], *,
                pinned: bool = False, user_id: str | None = None,
                db: Session | None = None) -> int:
    """Store one message and return its id; creates the session if needed.

    ``content`` is a string or a Messages API content array (every block type
    of a reply, server tools', MCP's and compaction's included, and any later
    type: see recap.core.content.blocks), stored as given and replayed by
    ``build_context``.
    ``user_id`` names the app's user the session belongs to (set once, on the
    first message that passes it; later messages may omit it): memories are then
    the user's, shared by all their sessions. Another ``user_id`` than the
    session's raises InvalidInput naming both. With ``db``, writes inside the
    caller's transaction (the caller commits); otherwise in a transaction of its
    own. Raises InvalidInput naming the problem (for an array: the block and
    field), writing nothing.
    """
    msg = validate_message(session_id, role, content, pinned=pinned, user_id=user_id,
                           max_inline_chars=get_settings().max_inline_base64_chars)
    new = NewMessage(session_id, role, msg, message_tokens(msg), pinned, user_id)
    if db is not None:
        return insert_message(db, new)
    with autocommit_connection() as conn:  # Core: no ORM session needed on the reply path
        return insert_message(conn, new)


def after_reply(session_id: str, *, db: Session | None = None) -> bool:
    """The hook: maybe queue one summarize job (and, after the first exchange, one
    title job). Returns True if a summarize job was (or will be) sent; see
    :func:`reply_jobs` for both answers.

    Raises InvalidInput for a bad id; never raises anything else: broker or
    database trouble is logged and the sweeper catches up. While the broker is
    failing it does not even try (one failed publish pauses publishing for a few
    seconds), so replies stay fast during an outage. With ``db``, the decision
    runs in a savepoint of the caller's transaction (a failure leaves it usable),
    and jobs are sent only after its outermost commit, never if it rolls back.
    """
    return reply_jobs(session_id, db=db).summarize


def reply_jobs(session_id: str, *, db: Session | None = None) -> ReplyJobs:
    """:func:`after_reply`, saying which jobs it sent: a summarize job, a title job
    (``recap ingest`` counts both). Same contract otherwise.

    Two steps: :func:`decide` (the hook's read and its pending markers), then
    publish (recap.store.enqueue): at once, or after ``db``'s commit."""
    check_session_id(session_id)
    if BREAKER.is_open():
        return ReplyJobs()
    try:
        with _deciding_on(db) as s:
            jobs = decide(s, session_id)
    except Exception as exc:
        return ReplyJobs(summarize=hook_failed(session_id, exc))
    if db is None:
        return send_both(session_id, jobs)
    return ReplyJobs(send_after_commit(db, session_id, jobs), jobs.title, jobs.missing)


@contextlib.contextmanager
def _deciding_on(db: Session | None) -> Iterator[Session | Connection]:
    """Where the hook decides: with no ``db``, a connection of its own and no
    transaction (the read is one statement, and each marker update is one statement
    whose WHERE settles coalescing by itself); else a savepoint of ``db``'s
    transaction (a failure leaves it usable)."""
    if db is None:
        with autocommit_connection() as conn:
            yield conn
    else:
        with db.begin_nested():
            yield db


def decide(s: Session | Connection, session_id: str) -> ReplyJobs:
    """The jobs to send, from one read of the session's counters (the plan:
    recap.api.hook); each has already set its pending marker (on ``s``: committed
    at once on an autocommit connection)."""
    settings = get_settings()
    # The lease and the marker on the clock the jobs and the sweeper use: on
    # PostgreSQL the read compares with now() itself and hands it back.
    server_clock = _dialect(s) == "postgresql"
    bound = None if server_clock else utcnow()
    row = s.execute(counters_statement(server_clock=server_clock),
                    counters_params(session_id, settings=settings, now=bound)).one_or_none()
    hook = plan_counters(session_id, row, settings=settings, bound=bound)
    if hook.missing:
        return ReplyJobs(missing=True)
    title = hook.title is not None and rowcount(s.execute(hook.title)) == 1
    queue = hook.summarize is not None and rowcount(s.execute(hook.summarize)) == 1
    return ReplyJobs(queue, title)


def hook_failed(session_id: str, exc: Exception) -> bool:
    """Log a failed hook (the sweeper catches up) and return its result, False."""
    log.warning("after_reply for session %r failed (%s: %s); the sweeper will catch up",
                session_id, type(exc).__name__, exc)
    return False
