"""Memory provenance rows (recap.models.MemorySource): recording a memory's sources and
dropping them, which deletes a memory only when its last source goes.

Helpers take the database session as ``db=`` and never commit: the caller owns
the transaction (a job's apply, forget, rewind).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, delete, exists, insert, select, update
from sqlalchemy.orm import Session

from recap.db import Db
from recap.models import Memory, MemorySource


def add_source(memory_id: int, *, db: Db, session_id: str, kind: str,
               first_id: int | None, last_id: int | None, run_id: int | None) -> None:
    """Record that ``session_id``'s batch first_id..last_id stated memory ``memory_id``."""
    db.execute(insert(MemorySource).values(
        memory_id=memory_id, session_id=session_id, kind=kind, first_message_id=first_id,
        last_message_id=last_id, run_id=run_id))


def drop_sources(where: ColumnElement[bool], *, db: Session) -> int:
    """Delete the sources matching ``where``; returns the memories deleted because
    they lost their last source.

    A memory that lost its last source goes, and one it had superseded is live
    again (the newer fact is no longer stated anywhere); a memory that keeps other
    sources stays, its session and message range now those of its oldest
    remaining source (so erasing the session it came from first keeps it).
    """
    touched = sorted(set(db.scalars(select(MemorySource.memory_id).where(where))))
    if not touched:
        return 0
    db.execute(delete(MemorySource).where(where))
    return settle(touched, db=db)


def settle(memory_ids: Sequence[int], *, db: Session) -> int:
    """Delete those of ``memory_ids`` without sources (see :func:`drop_sources`) and
    re-point the others to their oldest source; returns the memories deleted."""
    sourced = exists().where(MemorySource.memory_id == Memory.id)
    orphans = list(db.scalars(select(Memory.id).where(Memory.id.in_(memory_ids), ~sourced)))
    if orphans:
        db.execute(update(Memory).where(Memory.superseded_by.in_(orphans))
                   .values(superseded_by=None))
        db.execute(delete(Memory).where(Memory.id.in_(orphans)))
    gone = set(orphans)
    kept = [i for i in memory_ids if i not in gone]
    if kept:
        db.execute(update(Memory).where(Memory.id.in_(kept)).values(
            session_id=_oldest(MemorySource.session_id),
            first_message_id=_oldest(MemorySource.first_message_id),
            last_message_id=_oldest(MemorySource.last_message_id)))
    return len(orphans)


def _oldest(column: Any) -> Any:
    """``column`` of the memory's oldest source (correlated to the updated row)."""
    return (select(column).where(MemorySource.memory_id == Memory.id)
            .order_by(MemorySource.id).limit(1).scalar_subquery())


def memory_sources(memory_ids: Sequence[int], *,
                   db: Session) -> dict[int, list[dict[str, Any]]]:
    """The sources of each of ``memory_ids``, oldest first, as plain dicts."""
    out: dict[int, list[dict[str, Any]]] = {}
    for r in db.scalars(select(MemorySource).where(MemorySource.memory_id.in_(memory_ids))
                        .order_by(MemorySource.id)):
        out.setdefault(r.memory_id, []).append({
            "session_id": r.session_id, "kind": r.kind, "first_message_id": r.first_message_id,
            "last_message_id": r.last_message_id, "run_id": r.run_id})
    return out


def drop_unsourced(where: ColumnElement[bool], *, db: Session) -> int:
    """Delete the memories matching ``where`` that have no source row at all (stored
    without one): they go with what ``where`` names, as :func:`drop_sources`'s
    orphans do. Returns the memories deleted."""
    sourced = exists().where(MemorySource.memory_id == Memory.id)
    return settle(list(db.scalars(select(Memory.id).where(where, ~sourced))), db=db)
