"""Row helpers for the jobs' transactions.

Each takes the chat session's id first and the database session as ``db=``
(keyword-only), and never commits: the job functions own the transactions.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Executable,
    Update,
    bindparam,
    insert,
    literal,
    select,
    update,
)
from sqlalchemy.orm import Session

from models import ArchivedMessage, Memory
from models import messages_table as MESSAGES
from models import runs_table as RUNS
from models import sessions_table as SESSIONS
from worker.core.memories import Fact
from worker.db import insert_ignoring_duplicates, rowcount


def lease_free(now: datetime) -> ColumnElement[bool]:
    """No job holds the session: no lease, or one that expired (its holder died)."""
    return SESSIONS.c.lease_token.is_(None) | (SESSIONS.c.lease_expires_at <= now)


def lease_update(session_id: str, *, token: str, now: datetime, lease_s: int,
                 **values: Any) -> Update:
    """The lease-taking UPDATE (to execute): ``token`` holds the session for
    ``lease_s`` seconds, if no live lease exists; ``values`` are set with it."""
    return (update(SESSIONS)
            .where(SESSIONS.c.id == session_id, lease_free(now))
            .values(lease_token=token, lease_expires_at=now + timedelta(seconds=lease_s),
                    **values))


def record_run(session_id: str, *, db: Session, task_id: str | None, attempt: int,
               status: str, reason: str, **fields: object) -> int:
    """Insert one summary_runs row; returns its id."""
    row = {"session_id": session_id[:255], "task_id": task_id, "attempt": attempt,
           "status": status, "reason": reason, **fields}
    keys = tuple(sorted(row))
    return int(db.execute(_run_insert(keys), {f"v_{k}": row[k] for k in keys}).scalar_one())


@functools.cache
def _run_insert(keys: tuple[str, ...]) -> Executable:
    # Built once per set of columns, with bound parameters: building an INSERT and
    # its cache key costs a job more CPU than sending it.
    return (insert(RUNS).values({k: bindparam(f"v_{k}", type_=RUNS.c[k].type) for k in keys})
            .returning(RUNS.c.id))


def release(session_id: str, *, db: Session, token: str,
            blocked_until: datetime | None = None, enqueued_at: datetime | None = None) -> None:
    """Drop the lease if ``token`` still holds it."""
    values: dict[str, object] = {"lease_token": None, "lease_expires_at": None,
                                 "lost_leases": 0, "enqueued_at": enqueued_at}
    if blocked_until is not None:
        values["blocked_until"] = blocked_until
    db.execute(update(SESSIONS)
               .where(SESSIONS.c.id == session_id, SESSIONS.c.lease_token == token)
               .values(**values))


def save_memories(session_id: str, facts: Sequence[Fact], *, db: Session, first_id: int,
                  last_id: int) -> None:
    """Store facts mined from messages first_id..last_id; exact duplicates are kept once."""
    insert_ignoring_duplicates(Memory, [
        {"session_id": session_id, "fact": f.fact, "fact_hash": f.digest,
         "category": f.category, "importance": f.importance,
         "first_message_id": first_id, "last_message_id": last_id} for f in facts],
        db=db, keys=("session_id", "fact_hash"))


def archive_messages(session_id: str, ids: Sequence[int], *, db: Session, run_id: int) -> int:
    """Copy the batch into archived_messages (same transaction as its delete)."""
    cols = (MESSAGES.c.id, MESSAGES.c.session_id, MESSAGES.c.role, MESSAGES.c.content,
            MESSAGES.c.token_count, MESSAGES.c.pinned, MESSAGES.c.created_at)
    source = select(*cols, literal(run_id, BigInteger())).where(
        MESSAGES.c.session_id == session_id, MESSAGES.c.id.in_(ids))
    return rowcount(db.execute(insert(ArchivedMessage).from_select(
        ["id", "session_id", "role", "content", "token_count", "pinned", "created_at",
         "run_id"], source)))
