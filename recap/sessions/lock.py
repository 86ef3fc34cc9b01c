"""What a rewind and an edit share: one transaction under the session's lease.

:func:`locked` runs only while no job holds a live lease and clears an expired
one, so a job whose lease ran out finds its fence broken and changes nothing;
:func:`retrying` waits a running job out (up to ``wait_s``), then SessionBusy.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from recap.errors import SessionBusy, SessionNotFound
from recap.models import ArchivedMessage, SummaryRun
from recap.models import messages_table as MESSAGES
from recap.models import sessions_table as SESSIONS
from recap.store.fence import clear_expired

T = TypeVar("T")

# How long a rewind or edit waits for a running job to finish before SessionBusy.
WAIT_S = 2.0


class Busy(Exception):
    """A job holds the session's live lease (:func:`retrying` waits it out)."""


def locked(session_id: str, *, db: Session, now: datetime) -> Any:
    """Lock the session row if no job holds a live lease, clearing an expired one
    (its job's apply then fails its fence). Raises Busy or SessionNotFound."""
    row = db.execute(
        clear_expired(session_id, now=now)
        .returning(SESSIONS.c.summary_version, SESSIONS.c.rolling_summary,
                   SESSIONS.c.summary_tokens, SESSIONS.c.overrides)).one_or_none()
    if row is None:
        if db.scalar(select(SESSIONS.c.id).where(SESSIONS.c.id == session_id)) is None:
            raise SessionNotFound(f"no chat session with id {session_id!r}")
        raise Busy
    return row


def retrying(session_id: str, wait_s: float, fn: Callable[[], T]) -> T:
    """``fn()``, called again while it raises :class:`Busy`, for up to ``wait_s``
    seconds; then SessionBusy."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return fn()
        except Busy:
            if time.monotonic() >= deadline:
                raise SessionBusy(f"session {session_id!r} is being summarized (a job holds its "
                                  "lease); nothing changed, retry in a few seconds") from None
            time.sleep(0.05)


def live_runs(session_id: str, *, db: Session) -> list[Any]:
    """The applied runs that condensed messages and that no rewind undid, oldest first."""
    return list(db.execute(
        select(SummaryRun.id, SummaryRun.first_message_id, SummaryRun.last_message_id,
               SummaryRun.messages_condensed)
        .where(SummaryRun.session_id == session_id, SummaryRun.status == "applied",
               SummaryRun.undone_by.is_(None), SummaryRun.messages_condensed > 0)
        .order_by(SummaryRun.id)))


def exists(session_id: str, message_id: int, *, db: Session) -> bool:
    """Whether ``message_id`` is a message of the session, active or archived."""
    return any(db.scalar(select(t.id).where(t.session_id == session_id, t.id == message_id))
               is not None for t in (ArchivedMessage, MESSAGES.c))
