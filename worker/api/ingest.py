"""The chat app's entry points: ``add_message`` and the ``after_reply`` hook.

Both are on the chat app's reply path, so they do as little as possible:
``add_message`` is one upsert, one counter update and one INSERT; ``after_reply``
reads the session's counters (one primary-key lookup) and only when the policy
could trigger marks the session pending and queues one job.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, cast

from sqlalchemy import (
    Boolean,
    Connection,
    DateTime,
    Executable,
    Integer,
    String,
    Table,
    Text,
    bindparam,
    event,
    func,
    insert,
    select,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from models import ChatMessage, ChatSession
from worker.api.validate import Message, check_session_id, check_user_id, prepare_message
from worker.core import policy
from worker.core.titles import needs_title
from worker.db import autocommit_connection, get_engine, insert_or_update, utcnow
from worker.errors import InvalidInput
from worker.llm.tokens import message_tokens
from worker.settings import effective, get_settings
from worker.store.enqueue import (
    BREAKER,
    mark_pending,
    mark_title_requested,
    send,
    send_title,
    stale_before,
)

log = logging.getLogger("recap.ingest")

# Core tables on the reply path: skips the ORM's bulk-persistence layer.
SESSIONS = cast(Table, ChatSession.__table__)
MESSAGES = cast(Table, ChatMessage.__table__)


def _add(s: Session | Connection, session_id: str, role: str, content: str, pinned: bool,
         tokens: int, user_id: str | None = None, blocks: list[dict[str, Any]] | None = None,
         tool_links: str | None = None) -> int:
    if _dialect(s) == "postgresql":
        added = s.execute(_add_statement(), {
            "session_id": session_id, "role": role, "content": content, "pinned": pinned,
            "tokens": tokens, "now": utcnow(), "user_id": user_id, "blocks": blocks,
            "tool_links": tool_links}).scalar()
        if added is None:  # the upsert's WHERE refused: another user's session
            raise_other_user(s, session_id, user_id or "")
        return int(added)
    # Session and counters first, in one statement: it locks the session row, so
    # concurrent writers of one session commit in id order and the counters stay exact.
    changes = {"message_count": SESSIONS.c.message_count + 1,
               "active_tokens": SESSIONS.c.active_tokens + tokens, "updated_at": utcnow()}
    if user_id is None:
        insert_or_update(SESSIONS, {"id": session_id, "message_count": 1,
                                    "active_tokens": tokens},
                         db=s, keys=["id"], changes=changes)
    elif not insert_or_update(
            SESSIONS, {"id": session_id, "message_count": 1, "active_tokens": tokens,
                       "user_id": user_id}, db=s, keys=["id"],
            changes={**changes, "user_id": func.coalesce(SESSIONS.c.user_id, user_id)},
            # A session belongs to one user: another user's id writes nothing.
            where=SESSIONS.c.user_id.is_(None) | (SESSIONS.c.user_id == user_id)):
        raise_other_user(s, session_id, user_id)
    return int(s.execute(insert(MESSAGES).values(
        session_id=session_id, role=role, content=content, token_count=tokens,
        pinned=pinned, **({"blocks": blocks, "tool_links": tool_links} if blocks else {}))
        .returning(MESSAGES.c.id)).scalar_one())


def raise_other_user(s: Session | Connection, session_id: str, user_id: str) -> NoReturn:
    """Raise InvalidInput: ``session_id`` belongs to another user than ``user_id``."""
    owner = s.execute(select(SESSIONS.c.user_id).where(SESSIONS.c.id == session_id)).scalar()
    raise InvalidInput(f"session {session_id!r} belongs to user {owner!r}, not {user_id!r}; "
                       "a session's user_id cannot change")


def prepare(role: object, content: object, pinned: object) -> Message:
    """:func:`worker.api.validate.prepare_message` under the settings' inline cap."""
    return prepare_message(role, content, pinned,
                           max_inline_chars=get_settings().max_inline_base64_chars)


@functools.cache
def _add_statement() -> Executable:
    """PostgreSQL: :func:`_add`'s two writes as one statement (one round trip), built
    once with bound parameters so each call skips building and cache-keying it.

    The session upsert (which locks the session row) runs in a CTE that the
    message INSERT selects from, so the message's id is drawn after the lock is
    held: concurrent writers of one session still commit in id order. A session
    of another user than ``user_id`` is left alone (the upsert's WHERE): the CTE
    is then empty, so is the INSERT, and the statement returns no row.
    """
    user = sql_cast(bindparam("user_id", type_=String), String)
    upserted = (pg_insert(SESSIONS)
                .values(id=bindparam("session_id", type_=String), message_count=1,
                        active_tokens=bindparam("tokens", type_=Integer), user_id=user)
                .on_conflict_do_update(index_elements=["id"], set_={
                    "message_count": SESSIONS.c.message_count + 1,
                    "active_tokens": SESSIONS.c.active_tokens
                    + bindparam("tokens", type_=Integer),
                    "updated_at": bindparam("now", type_=DateTime(timezone=True)),
                    "user_id": func.coalesce(SESSIONS.c.user_id, user)},
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
                                bindparam("blocks", type_=MESSAGES.c.blocks.type),
                                bindparam("tool_links", type_=Text)))
            .returning(MESSAGES.c.id))


def _dialect(s: Session | Connection) -> str:
    return (s.get_bind() if isinstance(s, Session) else s).dialect.name


def add_message(session_id: str, role: str, content: str | list[dict[str, Any]], *,
                pinned: bool = False, user_id: str | None = None,
                db: Session | None = None) -> int:
    """Store one message and return its id; creates the session if needed.

    ``content`` is a string or a Messages API content array (text, tool_use,
    tool_result, thinking, redacted_thinking, image, document: see
    worker.core.blocks), stored as given and replayed by ``build_context``.
    ``user_id`` names the app's user the session belongs to (set once, on the
    first message that passes it; later messages may omit it): memories are then
    the user's, shared by all their sessions. Another ``user_id`` than the
    session's raises InvalidInput naming both. With ``db``, writes inside the
    caller's transaction (the caller commits); otherwise in a transaction of its
    own. Raises InvalidInput naming the problem (for an array: the block and
    field), writing nothing.
    """
    check_session_id(session_id)
    msg = prepare(role, content, pinned)
    check_user_id(user_id)
    args = (session_id, role, msg.content, pinned, message_tokens(msg), user_id, msg.blocks,
            msg.tool_links)
    if db is not None:
        return _add(db, *args)
    with autocommit_connection() as conn:  # Core: no ORM session needed on the reply path
        return _add(conn, *args)


def _decide(s: Session | Connection, session_id: str) -> tuple[bool, bool]:
    """(queue a summarize job, queue a title job), from one read of the session's
    counters; each yes has already set its pending marker in this transaction."""
    settings = get_settings()
    now = utcnow()
    stale = stale_before(now, settings)
    row = s.execute(
        select(ChatSession.message_count, ChatSession.active_tokens, ChatSession.summary_tokens,
               (ChatSession.lease_token.isnot(None)
                & (ChatSession.lease_expires_at > now)).label("leased"),
               (ChatSession.blocked_until > now).label("blocked"), ChatSession.normal_blocked,
               ChatSession.normal_blocked_under,
               ChatSession.overrides, ChatSession.title,
               # Compared in SQL: SQLite hands back naive datetimes.
               (ChatSession.title_requested_at > stale).label("title_fresh"))
        .where(ChatSession.id == session_id)).one_or_none()
    if row is None:
        return False, False
    want_title = (settings.titles_enabled
                  and needs_title(title=row.title, message_count=row.message_count,
                                  title_requested_at_is_fresh=bool(row.title_fresh))
                  and mark_title_requested(session_id, db=s, now=now, stale_before=stale))
    if row.leased or row.blocked:
        # A running job re-checks when it applies; a dead-lettered session waits
        # for its cool-down or `recap retry`.
        return False, want_title
    if row.overrides:
        try:
            settings = effective(settings, row.overrides)
        except InvalidInput:
            pass  # the job records the bad overrides (and dead-letters the session)
    if not policy.might_trigger(message_count=row.message_count,
                                active_tokens=row.active_tokens,
                                summary_tokens=row.summary_tokens, t=settings.thresholds(),
                                # The flag holds only under the thresholds it was set under.
                                normal_blocked=row.normal_blocked and
                                row.normal_blocked_under == settings.thresholds_key()):
        return False, want_title
    return mark_pending(session_id, db=s, now=now, settings=settings), want_title


@dataclass(frozen=True)
class ReplyJobs:
    """What one :func:`reply_jobs` call sent (or, with ``db``, will send on commit)."""

    summarize: bool = False
    title: bool = False


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
    (``recap ingest`` counts both). Same contract otherwise."""
    check_session_id(session_id)
    if BREAKER.is_open():
        return ReplyJobs()
    try:
        if db is None:
            with get_engine().begin() as conn:
                queue, title = _decide(conn, session_id)
            return send_both(session_id, queue, title)
        queue, title = decide_in_savepoint(db, session_id)
    except Exception as exc:
        return ReplyJobs(summarize=hook_failed(session_id, exc))
    return ReplyJobs(send_after_commit(db, session_id, queue, title), title)


# The pieces below are shared with the asyncio API (worker.api.aio), which runs
# the same decision through SQLAlchemy's run_sync and the sends off its loop.

def decide_in_savepoint(db: Session, session_id: str) -> tuple[bool, bool]:
    """:func:`_decide` in a savepoint of the caller's transaction: a failure leaves
    that transaction usable."""
    with db.begin_nested():
        return _decide(db, session_id)


def hook_failed(session_id: str, exc: Exception) -> bool:
    """Log a failed hook (the sweeper catches up) and return its result, False."""
    log.warning("after_reply for session %r failed (%s: %s); the sweeper will catch up",
                session_id, type(exc).__name__, exc)
    return False


def send_now(session_id: str, queue: bool, title: bool) -> bool:
    """Publish what :func:`_decide` asked for; True if a summarize job was sent."""
    return send_both(session_id, queue, title).summarize


def send_both(session_id: str, queue: bool, title: bool) -> ReplyJobs:
    """Publish what :func:`_decide` asked for; which jobs were sent."""
    titled = send_title(session_id) if title else False
    return ReplyJobs(send(session_id) if queue else False, titled)


def send_jobs(jobs: list[tuple[str, str]]) -> None:
    """Publish ``(kind, session_id)`` jobs, kind "title" or "summarize"."""
    for kind, sid in jobs:
        send_title(sid) if kind == "title" else send(sid)


def send_after_commit(db: Session, session_id: str, queue: bool, title: bool, *,
                      dispatch: Callable[[list[tuple[str, str]]], None] = send_jobs) -> bool:
    """Have ``dispatch`` publish what :func:`_decide` asked for once ``db``'s outermost
    transaction commits (never if it rolls back); returns ``queue``."""
    if title:
        _send_after_commit(db, ("title", session_id), dispatch)
    if queue:
        _send_after_commit(db, ("summarize", session_id), dispatch)
    return queue


def _send_after_commit(db: Session, job: tuple[str, str],
                       dispatch: Callable[[list[tuple[str, str]]], None]) -> None:
    db.info.setdefault("recap_pending_sends", set()).add(job)
    db.info["recap_dispatch"] = dispatch
    if not db.info.get("recap_listening"):
        db.info["recap_listening"] = True
        event.listen(db, "after_commit", _on_commit)
        event.listen(db, "after_transaction_end", _on_transaction_end)


def _on_commit(session: Session) -> None:
    # after_commit also fires when a SAVEPOINT is released; only the outermost
    # commit counts. No SQL may run here, so just take note.
    if not session.in_nested_transaction():
        session.info["recap_committed"] = True


def _on_transaction_end(session: Session, trans: Any) -> None:
    if trans.parent is not None or trans.nested:
        return  # a savepoint or subtransaction: the outcome is not decided yet
    committed = session.info.pop("recap_committed", False)
    pending = session.info.pop("recap_pending_sends", set())
    dispatch = session.info.pop("recap_dispatch", send_jobs)
    if committed and pending:
        dispatch(sorted(pending))
