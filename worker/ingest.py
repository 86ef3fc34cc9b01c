"""The chat app's entry points: ``add_message`` and the ``after_reply`` hook.

Both are on the chat app's reply path, so they do as little as possible:
``add_message`` is one upsert, one counter update and one INSERT; ``after_reply``
reads the session's counters (one primary-key lookup) and only when the policy
could trigger marks the session pending and queues one job.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from sqlalchemy import Connection, Table, event, insert, select
from sqlalchemy.orm import Session

from models import ROLES, ChatMessage, ChatSession
from worker import policy, titles
from worker.db import get_engine
from worker.enqueue import mark_pending, send
from worker.errors import InvalidInput
from worker.service import thresholds, utcnow
from worker.settings import effective, get_settings
from worker.store import insert_or_update
from worker.tokens import count_tokens

log = logging.getLogger("recap.ingest")

MAX_SESSION_ID = 255
# Core tables on the reply path: skips the ORM's bulk-persistence layer.
SESSIONS = cast(Table, ChatSession.__table__)
MESSAGES = cast(Table, ChatMessage.__table__)
# Far above any real chat message (a bigger one is almost surely a bug upstream),
# and small enough that one message is summarized within a job's time limit.
MAX_CONTENT_CHARS = 2 * 1024 * 1024


def _check_text(value: str, what: str) -> None:
    if "\x00" in value:
        raise InvalidInput(f"{what} contains a NUL byte, which is not valid text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} is not valid text: {exc.reason} at position "
                           f"{exc.start} (a lone surrogate?)") from None


def check_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is a usable id, else raise InvalidInput."""
    if not isinstance(session_id, str):
        raise InvalidInput(f"session_id must be a str, got {type(session_id).__name__}")
    if not session_id.strip():
        raise InvalidInput("session_id is empty")
    if len(session_id) > MAX_SESSION_ID:
        raise InvalidInput(f"session_id is {len(session_id)} characters; "
                           f"at most {MAX_SESSION_ID} are allowed")
    _check_text(session_id, "session_id")
    return session_id


def check_message(role: object, content: object, pinned: object) -> None:
    if role not in ROLES:
        raise InvalidInput(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    if not isinstance(content, str):
        raise InvalidInput(f"content must be a str, got {type(content).__name__}")
    if not content.strip():
        raise InvalidInput("content is empty or whitespace only")
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInput(f"content is {len(content)} characters; at most "
                           f"{MAX_CONTENT_CHARS} are allowed")
    _check_text(content, "content")
    if not isinstance(pinned, bool):
        raise InvalidInput(f"pinned must be a bool, got {type(pinned).__name__}")


def _add(s: Session | Connection, session_id: str, role: str, content: str, pinned: bool,
         tokens: int) -> int:
    # Session and counters first, in one statement: it locks the session row, so
    # concurrent writers of one session commit in id order and the counters stay exact.
    insert_or_update(s, SESSIONS, {"id": session_id, "message_count": 1,
                                      "active_tokens": tokens},
                     keys=["id"], changes={"message_count": SESSIONS.c.message_count + 1,
                                           "active_tokens": SESSIONS.c.active_tokens + tokens,
                                           "updated_at": utcnow()})
    return int(s.execute(insert(MESSAGES).values(
        session_id=session_id, role=role, content=content, token_count=tokens,
        pinned=pinned).returning(MESSAGES.c.id)).scalar_one())


def add_message(session_id: str, role: str, content: str, *, pinned: bool = False,
                db: Session | None = None) -> int:
    """Store one message and return its id; creates the session if needed.

    With ``db``, writes inside the caller's transaction (the caller commits);
    otherwise in a transaction of its own. Raises InvalidInput, writing nothing.
    """
    check_session_id(session_id)
    check_message(role, content, pinned)
    tokens = count_tokens(content)
    if db is not None:
        return _add(db, session_id, role, content, pinned, tokens)
    with get_engine().begin() as conn:  # Core: no ORM session needed on the reply path
        return _add(conn, session_id, role, content, pinned, tokens)


def _decide(s: Session | Connection, session_id: str) -> tuple[bool, bool]:
    """(queue a summarize job, queue a title job), from one read of the session's
    counters; each yes has already set its pending marker in this transaction."""
    settings = get_settings()
    now = utcnow()
    stale = titles.stale_before(now, settings)
    row = s.execute(
        select(ChatSession.message_count, ChatSession.active_tokens, ChatSession.summary_tokens,
               ChatSession.lease_token.isnot(None) & (ChatSession.lease_expires_at > now),
               ChatSession.blocked_until > now, ChatSession.normal_blocked,
               ChatSession.overrides, ChatSession.title,
               # Compared in SQL: SQLite hands back naive datetimes.
               ChatSession.title_requested_at > stale)
        .where(ChatSession.id == session_id)).one_or_none()
    if row is None:
        return False, False
    (count, active, summary, leased, blocked, normal_blocked, overrides, title,
     title_fresh) = row
    want_title = (titles.titles_enabled(settings)
                  and titles.needs_title(title=title, message_count=count,
                                         title_requested_at_is_fresh=bool(title_fresh))
                  and titles.mark_title_requested(s, session_id, now=now, stale_before=stale))
    if leased or blocked:
        # A running job re-checks when it applies; a dead-lettered session waits
        # for its cool-down or `recap retry`.
        return False, want_title
    if overrides:
        try:
            settings = effective(settings, overrides)
        except InvalidInput:
            pass  # the job records the bad overrides (and dead-letters the session)
    if not policy.might_trigger(message_count=count, active_tokens=active,
                                summary_tokens=summary, t=thresholds(settings),
                                normal_blocked=normal_blocked):
        return False, want_title
    return mark_pending(s, session_id, now=now, settings=settings), want_title


def after_reply(session_id: str, *, db: Session | None = None) -> bool:
    """The hook: maybe queue one summarize job (and, after the first exchange, one
    title job). Returns True if a summarize job was (or will be) sent.

    Never raises for broker trouble (it logs and the sweeper catches up). With
    ``db``, jobs are sent only after the caller's outermost transaction commits,
    and never if it rolls back.
    """
    check_session_id(session_id)
    if db is None:
        with get_engine().begin() as conn:
            queue, title = _decide(conn, session_id)
        if title:
            titles.send_title(session_id)
        return send(session_id) if queue else False
    queue, title = _decide(db, session_id)
    if title:
        _send_after_commit(db, ("title", session_id))
    if queue:
        _send_after_commit(db, ("summarize", session_id))
    return queue


def _send_after_commit(db: Session, job: tuple[str, str]) -> None:
    db.info.setdefault("recap_pending_sends", set()).add(job)
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
    if committed:
        for kind, sid in sorted(pending):
            titles.send_title(sid) if kind == "title" else send(sid)
