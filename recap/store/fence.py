"""The session fence: the one place that says who may change a session's summary
and delete its messages, and how every writer checks it.

- A job (summarize, and resummarize from the archive) takes the lease
  (:func:`take_lease`), calls Claude outside any transaction, then writes only
  where :func:`holds` is still true: its token holds the lease and the summary
  version is the one it read. Otherwise its write matches no row and changes
  nothing (the caller raises Superseded). :func:`release` drops the lease.
- A rewind or an edit runs in one transaction while no job holds a live lease
  (:func:`clear_expired`): it clears an expired one, so that job's write fails
  :func:`holds` and changes nothing.
- ``forget`` locks the session rows (:func:`lock_for_erase`) and deletes them: an
  apply mid-transaction finishes first; a later one finds no row, so
  :func:`holds` fails too.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Update, and_, case, select, update
from sqlalchemy.orm import Session

from recap.db import Db
from recap.models import sessions_table as SESSIONS


def lease_free(now: datetime) -> ColumnElement[bool]:
    """No job holds the session: no lease, or one that expired (its holder died)."""
    return SESSIONS.c.lease_token.is_(None) | (SESSIONS.c.lease_expires_at <= now)


def holds(session_id: Any, token: Any, version: Any) -> ColumnElement[bool]:
    """The fence: the session row is still held by ``token`` at summary ``version``
    (values, or bind parameters for a statement built once)."""
    return and_(SESSIONS.c.id == session_id, SESSIONS.c.lease_token == token,
                SESSIONS.c.summary_version == version)


def take_lease(session_id: Any, *, token: Any, now: Any, expires: Any,
               clear_pending: bool = False, count_lost: bool = False) -> Update:
    """The lease-taking UPDATE (to execute): ``token`` holds the session until
    ``expires`` (:func:`lease_expiry`), if no live lease exists at ``now`` (values,
    or bind parameters for a statement built once). ``clear_pending``: the job the
    pending marker stood for has started; ``count_lost``: an expired lease still
    set means its holder died mid-job (``lost_leases`` counts it)."""
    values: dict[str, Any] = {"lease_token": token, "lease_expires_at": expires}
    if clear_pending:
        values["enqueued_at"] = None
    if count_lost:
        values["lost_leases"] = SESSIONS.c.lost_leases + case(
            (SESSIONS.c.lease_token.isnot(None), 1), else_=0)
    return update(SESSIONS).where(SESSIONS.c.id == session_id, lease_free(now)).values(values)


def lease_expiry(now: datetime, lease_s: int) -> datetime:
    """When a lease taken at ``now`` for ``lease_s`` seconds expires."""
    return now + timedelta(seconds=lease_s)


def release(session_id: str, *, db: Db, token: str,
            blocked_until: datetime | None = None, enqueued_at: datetime | None = None) -> None:
    """Drop the lease if ``token`` still holds it."""
    values: dict[str, object] = {"lease_token": None, "lease_expires_at": None,
                                 "lost_leases": 0, "enqueued_at": enqueued_at}
    if blocked_until is not None:
        values["blocked_until"] = blocked_until
    db.execute(update(SESSIONS)
               .where(SESSIONS.c.id == session_id, SESSIONS.c.lease_token == token)
               .values(**values))


def clear_expired(session_id: str, *, now: datetime) -> Update:
    """For a rewind or an edit (to execute, RETURNING what it needs): matches the
    session only while no job holds a live lease, and clears an expired lease so
    its job's write fails :func:`holds`."""
    return (update(SESSIONS).where(SESSIONS.c.id == session_id, lease_free(now))
            .values(lease_token=None, lease_expires_at=None))


def lock_for_erase(where: ColumnElement[bool], *, db: Session) -> list[str]:
    """Lock the session rows ``where`` selects (FOR UPDATE) before erasing them: an
    apply holding one finishes first (its rows are then seen and erased); one that
    comes later waits, then finds no row. Returns their ids."""
    return [str(i) for i in db.scalars(select(SESSIONS.c.id).where(where).with_for_update())]
