"""The chat app's entry points: ``add_message`` and the ``after_reply`` hook.

Both are on the chat app's reply path, so they do as little as possible:
``add_message`` is one upsert, one counter update and one INSERT; ``after_reply``
reads the session's counters (one primary-key lookup) and only when the policy
could trigger marks the session pending and queues one job.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import event, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from models import ROLES, ChatMessage, ChatSession
from worker import policy
from worker.db import transaction
from worker.enqueue import mark_pending, send
from worker.errors import InvalidInput
from worker.service import thresholds, utcnow
from worker.settings import get_settings
from worker.tokens import count_tokens

log = logging.getLogger("recap.ingest")

MAX_SESSION_ID = 255
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


def _upsert_session(s: Session, session_id: str) -> None:
    dialect = s.get_bind().dialect.name
    make: Any = {"postgresql": pg_insert, "sqlite": sqlite_insert}.get(dialect)
    if make is not None:
        s.execute(make(ChatSession).values(id=session_id)
                  .on_conflict_do_nothing(index_elements=["id"]))
    elif s.get(ChatSession, session_id) is None:
        s.execute(insert(ChatSession).values(id=session_id))


def _add(s: Session, session_id: str, role: str, content: str, pinned: bool,
         tokens: int) -> int:
    _upsert_session(s, session_id)
    # Counters first: this locks the session row, so concurrent writers of one
    # session commit in id order and the counters stay exact.
    s.execute(update(ChatSession).where(ChatSession.id == session_id).values(
        message_count=ChatSession.message_count + 1,
        active_tokens=ChatSession.active_tokens + tokens, updated_at=utcnow()))
    return int(s.execute(insert(ChatMessage).values(
        session_id=session_id, role=role, content=content, token_count=tokens,
        pinned=pinned).returning(ChatMessage.id)).scalar_one())


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
    with transaction() as s:
        return _add(s, session_id, role, content, pinned, tokens)


def _should_queue(s: Session, session_id: str) -> bool:
    """Decide from counters alone, and if so set the pending marker (same transaction)."""
    settings = get_settings()
    now = utcnow()
    row = s.execute(
        select(ChatSession.message_count, ChatSession.active_tokens, ChatSession.summary_tokens,
               ChatSession.lease_token.isnot(None) & (ChatSession.lease_expires_at > now),
               ChatSession.blocked_until > now, ChatSession.normal_blocked)
        .where(ChatSession.id == session_id)).one_or_none()
    if row is None:
        return False
    count, active, summary, leased, blocked, normal_blocked = row
    if leased or blocked:
        # A running job re-checks when it applies; a dead-lettered session waits
        # for its cool-down or `recap retry`.
        return False
    if not policy.might_trigger(message_count=count, active_tokens=active,
                                summary_tokens=summary, t=thresholds(settings),
                                normal_blocked=normal_blocked):
        return False
    return mark_pending(s, session_id, now=now, settings=settings)


def after_reply(session_id: str, *, db: Session | None = None) -> bool:
    """The hook: maybe queue one summarize job. Returns True if a job was (or will be) sent.

    Never raises for broker trouble (it logs and the sweeper catches up). With
    ``db``, the job is sent only after the caller's outermost transaction
    commits, and never if it rolls back.
    """
    check_session_id(session_id)
    if db is None:
        with transaction() as s:
            queue = _should_queue(s, session_id)
        return send(session_id) if queue else False
    if not _should_queue(db, session_id):
        return False
    _send_after_commit(db, session_id)
    return True


def _send_after_commit(db: Session, session_id: str) -> None:
    db.info.setdefault("recap_pending_sends", set()).add(session_id)
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
        for sid in sorted(pending):
            send(sid)
