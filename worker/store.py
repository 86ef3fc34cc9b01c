"""Row-level helpers for the job's transactions: they take ``*, session`` and never
commit; worker.service and worker.archive own the transactions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Connection, insert, literal, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from models import ArchivedMessage, Memory
from models import messages_table as MESSAGES
from models import runs_table as RUNS
from models import sessions_table as SESSIONS
from worker.memories import Fact


def _insert(s: Session | Connection) -> Any:
    dialect = (s.get_bind() if isinstance(s, Session) else s).dialect.name
    make: Any = {"postgresql": pg_insert, "sqlite": sqlite_insert}.get(dialect)
    if make is None:
        raise NotImplementedError(f"no INSERT ... ON CONFLICT for {dialect}")
    return make


def insert_ignoring_duplicates(s: Session, model: Any, rows: Sequence[dict[str, Any]], *,
                               keys: Sequence[str]) -> None:
    """INSERT rows, skipping any that collide on the unique ``keys``."""
    if rows:
        s.execute(_insert(s)(model).values(list(rows))
                  .on_conflict_do_nothing(index_elements=list(keys)))


def insert_or_update(s: Session | Connection, model: Any, row: dict[str, Any], *,
                     keys: Sequence[str], changes: dict[str, Any]) -> None:
    """INSERT ``row``, or apply ``changes`` to the existing row with the same ``keys``
    (one statement; it locks the row either way)."""
    s.execute(_insert(s)(model).values(row)
              .on_conflict_do_update(index_elements=list(keys), set_=changes))


def record_run(s: Session, session_id: str, *, task_id: str | None, attempt: int, status: str,
               reason: str, **fields: object) -> int:
    """Insert one summary_runs row; returns its id."""
    return int(s.execute(insert(RUNS).values(
        session_id=session_id[:255], task_id=task_id, attempt=attempt, status=status,
        reason=reason, **fields).returning(RUNS.c.id)).scalar_one())


def release(s: Session, session_id: str, token: str, *, blocked_until: datetime | None = None,
            enqueued_at: datetime | None = None) -> None:
    """Drop the lease if ``token`` still holds it."""
    values: dict[str, object] = {"lease_token": None, "lease_expires_at": None,
                                 "lost_leases": 0, "enqueued_at": enqueued_at}
    if blocked_until is not None:
        values["blocked_until"] = blocked_until
    s.execute(update(SESSIONS)
              .where(SESSIONS.c.id == session_id, SESSIONS.c.lease_token == token)
              .values(**values))


def save_memories(s: Session, session_id: str, facts: Sequence[Fact], *,
                  first_id: int, last_id: int) -> None:
    """Store facts mined from messages first_id..last_id; exact duplicates are kept once."""
    insert_ignoring_duplicates(s, Memory, [
        {"session_id": session_id, "fact": f.fact, "fact_hash": f.digest,
         "category": f.category, "importance": f.importance,
         "first_message_id": first_id, "last_message_id": last_id} for f in facts],
        keys=("session_id", "fact_hash"))


def archive_messages(s: Session, session_id: str, ids: Sequence[int], *, run_id: int) -> int:
    """Copy the batch into archived_messages (same transaction as its delete)."""
    cols = (MESSAGES.c.id, MESSAGES.c.session_id, MESSAGES.c.role, MESSAGES.c.content,
            MESSAGES.c.token_count, MESSAGES.c.pinned, MESSAGES.c.created_at)
    source = select(*cols, literal(run_id, BigInteger())).where(
        MESSAGES.c.session_id == session_id, MESSAGES.c.id.in_(ids))
    result = s.execute(insert(ArchivedMessage).from_select(
        ["id", "session_id", "role", "content", "token_count", "pinned", "created_at",
         "run_id"], source))
    return int(result.rowcount)  # type: ignore[attr-defined]
