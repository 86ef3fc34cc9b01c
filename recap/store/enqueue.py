"""Queueing jobs with coalescing: at most one pending job per session and kind.

``chat_sessions.enqueued_at`` marks a queued summarize job that has not started
yet (``title_requested_at`` does the same for title jobs); the job clears it
when it claims the session. A marker older than RECAP_ENQUEUE_STALE_S is
treated as lost, and the sweeper queues again. Jobs are sent by task name, so
producers (the chat app, beat, the CLI) never import the tasks module.

The reply path publishes what its hook decided (:class:`ReplyJobs`) at once
(:func:`send_both`) or after the caller's commit (:func:`send_after_commit`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Connection, Update, and_, event, or_, update
from sqlalchemy.orm import Session

from recap.core.prompts.titles import MIN_MESSAGES
from recap.db import rowcount, transaction
from recap.models import ChatSession
from recap.settings import Settings
from recap.store.publisher import PUBLISHER

log = logging.getLogger("recap.enqueue")

SUMMARIZE_TASK = "recap.tasks.summarize_session"
TITLE_TASK = "recap.tasks.generate_title"


def stale_before(now: datetime, settings: Settings) -> datetime:
    """Pending markers set before this are treated as lost (RECAP_ENQUEUE_STALE_S)."""
    return now - timedelta(seconds=settings.enqueue_stale_s)


def pending_update(session_id: str, *, now: datetime, settings: Settings) -> Update:
    """Set the pending marker unless a live one exists: the caller sends a job only
    if this changed a row."""
    return (update(ChatSession)
            .where(ChatSession.id == session_id,
                   ChatSession.enqueued_at.is_(None)
                   | (ChatSession.enqueued_at <= stale_before(now, settings)))
            .values(enqueued_at=now))


def mark_pending(session_id: str, *, db: Session | Connection, now: datetime,
                 settings: Settings) -> bool:
    """Set the pending marker unless a live one exists; True if the caller should send."""
    return rowcount(db.execute(pending_update(session_id, now=now, settings=settings))) == 1


def send(session_id: str, *, task_id: str | None = None) -> bool:
    """Publish one summarize job; see :func:`publish`."""
    return publish(SUMMARIZE_TASK, session_id, marker=ChatSession.enqueued_at, task_id=task_id)


# After a failed publish this process publishes nothing for this long: the chat
# app's replies stay fast while the broker is down, and the sweeper queues the
# sessions that were skipped once it is back.
BROKER_PAUSE_S = 5.0


class Breaker:
    """A circuit breaker for publishing: open for ``pause_s`` after a failure."""

    def __init__(self, pause_s: float = BROKER_PAUSE_S) -> None:
        self.pause_s = pause_s
        self._open_until = 0.0

    def is_open(self) -> bool:
        return time.monotonic() < self._open_until

    def trip(self) -> None:
        self._open_until = time.monotonic() + self.pause_s

    def reset(self) -> None:
        self._open_until = 0.0


BREAKER = Breaker()


def publish(task_name: str, session_id: str, *, marker: Any,
            task_id: str | None = None) -> bool:
    """Publish one job of ``task_name`` for a session. Never raises: when the broker
    fails (or failed in the last BROKER_PAUSE_S), it clears the session's pending
    ``marker`` column so the sweeper retries, logs, and returns False."""
    if BREAKER.is_open():
        log.debug("broker paused after a failure: not publishing %s for session %r",
                  task_name, session_id)
    else:
        try:
            _send(task_name, session_id, task_id=task_id)
            BREAKER.reset()
            return True
        except Exception as exc:
            BREAKER.trip()
            log.warning("could not enqueue %s for session %r (%s: %s); publishing paused "
                        "for %.0fs, the sweeper will retry", task_name, session_id,
                        type(exc).__name__, exc, BREAKER.pause_s)
    try:
        with transaction() as s:
            s.execute(update(ChatSession).where(ChatSession.id == session_id)
                      .values({marker: None}))
    except Exception as exc:
        log.warning("could not clear the pending marker of session %r (%s)", session_id,
                    type(exc).__name__)
    return False


def _send(task_name: str, session_id: str, *, task_id: str | None) -> None:
    from recap.worker.celery_app import app

    # No retries at any level: this runs on the chat app's reply path. retry=False
    # covers the publish; the connection (recap.store.publisher: kept open, made
    # with max_retries=0) is not retried either.
    with PUBLISHER.connection(app) as conn:
        app.send_task(task_name, (session_id,), retry=False, task_id=task_id,
                      connection=conn)


def warm_publisher() -> None:
    """Load and exercise what :func:`publish` uses, publishing nothing: the Celery
    app configured from the settings, its routing, message and event machinery
    (``send_task`` loads them on its first call), a task message built, and a
    broker connection opened with its channel, kept for the publishes to come.
    Raises what connecting to the broker raises."""
    from recap.worker.celery_app import app

    amqp = app.amqp
    amqp.router.route({}, SUMMARIZE_TASK, ("warm-up",), {})
    amqp.create_task_message("warm-up", SUMMARIZE_TASK, ("warm-up",), {})
    for loaded in (amqp.send_task_message, app.tasks, app.AsyncResult, app.backend):
        assert loaded is not None  # each a lazy property: reading it loads it
    with PUBLISHER.connection(app) as conn:  # and kept open for the first reply
        conn.ensure_connection(max_retries=0)
        assert amqp.Producer(conn, auto_declare=False).channel is not None


def due_for_title(stale_before: datetime) -> ColumnElement[bool]:
    """The sweeper's where-clause: untitled sessions past the first exchange whose
    title job is not pending (never requested, or requested before ``stale_before``)."""
    return and_(ChatSession.title.is_(None), ChatSession.message_count >= MIN_MESSAGES,
                or_(ChatSession.title_requested_at.is_(None),
                    ChatSession.title_requested_at <= stale_before))


def title_due_update(session_id: str, *, now: datetime, stale_before: datetime) -> Update:
    """Set title_requested_at if the session is due: send a title job only if this
    changed a row."""
    return (update(ChatSession)
            .where(ChatSession.id == session_id, due_for_title(stale_before))
            .values(title_requested_at=now))


def mark_title_requested(session_id: str, *, db: Session | Connection, now: datetime,
                         stale_before: datetime) -> bool:
    """Set title_requested_at if the session is due (caller's transaction); True to send."""
    return rowcount(db.execute(title_due_update(session_id, now=now,
                                                stale_before=stale_before))) == 1


def send_title(session_id: str) -> bool:
    """Publish one title job (never raises; see recap.store.enqueue.publish)."""
    return publish(TITLE_TASK, session_id, marker=ChatSession.title_requested_at)


class JobKind(StrEnum):
    """The jobs the hook queues."""

    SUMMARIZE = "summarize"
    TITLE = "title"


class JobToSend(NamedTuple):
    """One job the hook decided to send (after the caller's commit, with ``db``)."""

    kind: JobKind
    session_id: str


@dataclass(frozen=True)
class ReplyJobs:
    """What one ``after_reply`` sent (or, with ``db``, will send on commit)."""

    summarize: bool = False
    title: bool = False
    # The hook's read found no such session (False when it did not read: the breaker
    # was open or the database failed).
    missing: bool = False

    def to_send(self, session_id: str) -> list[JobToSend]:
        """These jobs as :class:`JobToSend`, the title job first."""
        return [*([JobToSend(JobKind.TITLE, session_id)] if self.title else []),
                *([JobToSend(JobKind.SUMMARIZE, session_id)] if self.summarize else [])]


def send_both(session_id: str, jobs: ReplyJobs) -> ReplyJobs:
    """Publish what the hook decided; which jobs were sent."""
    titled = send_title(session_id) if jobs.title else False
    return ReplyJobs(send(session_id) if jobs.summarize else False, titled, jobs.missing)


def send_jobs(jobs: list[JobToSend]) -> None:
    """Publish ``jobs``."""
    for job in jobs:
        send_title(job.session_id) if job.kind is JobKind.TITLE else send(job.session_id)


def send_after_commit(db: Session, session_id: str, jobs: ReplyJobs, *,
                      dispatch: Callable[[list[JobToSend]], None] = send_jobs) -> bool:
    """Have ``dispatch`` publish ``jobs`` once ``db``'s outermost transaction commits
    (never if it rolls back); returns whether a summarize job is among them."""
    for job in jobs.to_send(session_id):
        _send_after_commit(db, job, dispatch)
    return jobs.summarize


def _send_after_commit(db: Session, job: JobToSend,
                       dispatch: Callable[[list[JobToSend]], None]) -> None:
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
