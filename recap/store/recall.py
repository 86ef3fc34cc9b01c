"""Reading memories back: whose they are (scope) and the live ones most relevant
to a query, for ``build_context`` and for the extraction call.

A memory's scope is ``u:<user_id>`` when its session names a user, else
``s:<session_id>`` (recap.models.Memory); a session reads its user's scope and its own
(memories it mined before it named its user). Superseded memories are never returned.
Relevance is PostgreSQL's ``ts_rank`` over ``to_tsvector('simple', fact)``
against an OR of the query's words; SQLite (the demo) has no full-text ranking
here, so its candidates are scored by word overlap in Python
(:func:`recap.core.memories.recall.overlap`). No full-text index: a scope holds tens to
hundreds of memories, read through the (scope, fact_hash) unique index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Float, Select, case, func, literal, select

from recap.core.memories.recall import Candidate, overlap, query_terms, rank_key
from recap.db import Db, dialect_name
from recap.models import ChatSession, Memory, MemorySource

# Most live memories read per context: far more than a memory budget shows, and
# on SQLite all of them are scored in Python.
MAX_CANDIDATES = 200


def scope_key(session_id: str, user_id: str | None) -> str:
    """Where a session's new memories go: its user's scope when it names one."""
    return f"u:{user_id}" if user_id is not None else f"s:{session_id}"


def scopes(session_id: str, user_id: str | None) -> tuple[str, ...]:
    """The scopes a session's memories are read from: its user's, and its own (what
    it mined before it named its user)."""
    return (scope_key(session_id, user_id), *((f"s:{session_id}",) if user_id else ()))


def session_scopes(session_id: str, *, db: Db) -> tuple[str, ...]:
    """:func:`scopes` of a stored session (its own scope only if it is unknown)."""
    user_id = db.scalar(select(ChatSession.user_id).where(ChatSession.id == session_id))
    return scopes(session_id, user_id)


# The kind a memory is shown as, strongest first: the user's own words, then what
# is known to come from a tool, a document, the assistant, a model's paraphrase
# (unverified); any other kind (the guard's lines, rows older than provenance)
# after them.
SHOWN_KINDS = ("user", "tool", "document", "assistant", "unverified")


def _shown_kind() -> Any:
    """The index in SHOWN_KINDS of a memory's strongest source (correlated)."""
    order = case(*((MemorySource.kind == k, i) for i, k in enumerate(SHOWN_KINDS)),
                 else_=len(SHOWN_KINDS))
    return (select(func.min(order)).where(MemorySource.memory_id == Memory.id)
            .scalar_subquery())


def shown_kind(index: int | None) -> str:
    """The source a candidate is shown with, from :func:`_shown_kind`'s index."""
    return SHOWN_KINDS[index] if index is not None and index < len(SHOWN_KINDS) else "guard"


def candidates_query(scope: Sequence[str], terms: list[str], *, dialect: str,
                     limit: int = MAX_CANDIDATES) -> Select[Any]:
    """Live memories of the ``scope`` list as (id, fact, importance, rank, shown), best
    first; rank is ts_rank on PostgreSQL and 0 elsewhere (see :func:`candidates`),
    shown the strongest kind of its sources (:func:`shown_kind`)."""
    if dialect == "postgresql" and terms:
        rank: Any = func.ts_rank(func.to_tsvector("simple", Memory.fact),
                                 func.to_tsquery("simple", " | ".join(terms)))
    else:
        rank = literal(0.0, Float())
    return (select(Memory.id, Memory.fact, Memory.importance, rank.label("rank"),
                   _shown_kind().label("shown"))
            .where(Memory.scope.in_(scope), Memory.superseded_by.is_(None))
            .order_by(rank.desc(), Memory.importance.desc(), Memory.id.desc())
            .limit(limit))


def to_candidates(rows: Any, terms: list[str], *, dialect: str) -> list[Candidate]:
    """The rows of :func:`candidates_query` as candidates, scored by word overlap
    where the database did not rank them."""
    found = [Candidate(int(r.id), r.fact, int(r.importance), float(r.rank or 0.0),
                       shown_kind(r.shown)) for r in rows]
    if dialect != "postgresql" and terms:
        found = [Candidate(c.id, c.fact, c.importance, overlap(terms, c.fact), c.source)
                 for c in found]
    return sorted(found, key=rank_key)


def candidates(scope: Sequence[str], *, db: Db, query: str,
               limit: int = MAX_CANDIDATES) -> list[Candidate]:
    """The live memories of the ``scope`` list most relevant to ``query``, best first."""
    terms = query_terms(query)
    dialect = dialect_name(db)
    rows = db.execute(candidates_query(scope, terms, dialect=dialect, limit=limit))
    return to_candidates(rows, terms, dialect=dialect)


def memories_for_prompt(session_id: str, *, db: Db, query: str,
                        limit: int) -> list[tuple[int, str]]:
    """(id, fact) of the session's (or its user's) most relevant live memories, for
    the extraction call: the model may answer that a new fact replaces one of them."""
    found = candidates(session_scopes(session_id, db=db), db=db, query=query,
                       limit=max(limit, MAX_CANDIDATES))
    return [(c.id, c.fact) for c in found[:limit]]
