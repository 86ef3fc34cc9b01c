"""The archive lookup behind recall at reply time (:mod:`recap.core.context.lookback`):
one statement, a few indexed reads per cue, no model call.

PostgreSQL: the GIN index ``ix_archived_messages_search`` over
``to_tsvector('simple', coalesce(search_terms, search_text, content))``, matched with
``plainto_tsquery('simple', cue)`` (the cue parsed as the text was); the index
has no pending list (``fastupdate`` off), so a cue found nowhere costs a few
index pages, not a read of every entry inserted since the last vacuum. SQLite: the
FTS5 table ``archived_messages_fts`` (kept by triggers), matched with the cue as
a phrase. Either way each cue reads at most ``PER_CUE + 1`` rows, each as an
excerpt around the cue's first occurrence, so the read stays small however long
the archive and its messages are. ``search_text`` is the full rendering of a
content-array message (``content`` cuts long tool results); NULL for a string
message, whose ``content`` is whole. ``search_terms`` (PostgreSQL) holds the
distinct words of a message too long for a tsvector (recap.store.search): such a
message is found by those words, and its excerpt still comes from its whole text.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    Integer,
    Select,
    Text,
    bindparam,
    func,
    literal,
    literal_column,
    select,
    text,
    union_all,
)

from recap.core.context.lookback import EXCERPT_BEFORE, EXCERPT_CHARS, PER_CUE, Cue, Hit
from recap.models import ArchivedMessage

A = ArchivedMessage
FTS_TABLE = "archived_messages_fts"


def _body() -> Any:
    return func.coalesce(A.search_text, A.content)


def _indexed() -> Any:
    """What ix_archived_messages_search reads (PostgreSQL)."""
    return func.coalesce(A.search_terms, A.search_text, A.content)


def _start(term: Any, *, dialect: str) -> Any:
    """Where the excerpt around ``term``'s first occurrence starts (1: the start)."""
    body = _body()
    where = (func.strpos(func.lower(body), term) if dialect == "postgresql"
             else func.instr(func.lower(body), term))
    return func.max(1, where - EXCERPT_BEFORE) if dialect != "postgresql" \
        else func.greatest(1, where - EXCERPT_BEFORE)


def _excerpt(term: Any, *, dialect: str) -> Any:
    return func.substr(_body(), _start(term, dialect=dialect), EXCERPT_CHARS)


def fts_phrase(term: str) -> str:
    """``term`` as an FTS5 phrase (its tokens in order), quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def lookup_query(session_id: str, chosen: Sequence[Cue], *, dialect: str
                 ) -> tuple[Select[Any], dict[str, str]]:
    """Per cue, at most ``PER_CUE + 1`` archived messages of the session holding it,
    as (cue, id, role, created_at, tool, excerpt, offset: where the excerpt starts in
    its message): the statement and its values.
    Raises ValueError without cues."""
    if not chosen:
        raise ValueError("lookup_query needs at least one cue")
    values = {"session_id": session_id}
    for i, cue in enumerate(chosen):
        values[f"cue_{i}"] = cue.term
        if dialect != "postgresql":
            values[f"phrase_{i}"] = fts_phrase(cue.term)
    return lookup_statement(len(chosen), dialect=dialect), values


@functools.cache
def lookup_statement(cues: int, *, dialect: str) -> Select[Any]:
    """The statement of :func:`lookup_query` for ``cues`` cues, its values bound by
    name. Built once per number of cues: building and compiling a statement of
    eight unions costs more than running it, and SQLAlchemy compiles the same
    statement object once."""
    session = bindparam("session_id", type_=Text)
    parts = []
    for i in range(cues):
        term = bindparam(f"cue_{i}", type_=Text)
        if dialect == "postgresql":
            match = func.to_tsvector(literal_column("'simple'"), _indexed()).bool_op("@@")(
                func.plainto_tsquery(literal_column("'simple'"), term))
        else:
            phrase = bindparam(f"phrase_{i}", type_=Text)
            match = A.id.in_(select(literal_column("rowid")).select_from(text(FTS_TABLE))
                             .where(literal_column(FTS_TABLE).op("MATCH")(phrase)))
        # Every match, planned as such (a fence): under a LIMIT the planner would
        # rather scan the session's rows in order, parsing each, than use the index.
        # Run lazily, it stops after the rows the LIMIT below takes.
        matched = select(A.id).where(A.session_id == session, match).cte(f"m{i}")
        if dialect == "postgresql":
            matched = matched.prefix_with("MATERIALIZED")
        ids = select(matched.c.id).limit(PER_CUE + 1).subquery(f"k{i}")
        parts.append(select(literal(i, Integer()).label("cue"), A.id, A.role, A.created_at,
                            A.tool_links.like("%result:%").label("tool"),
                            _excerpt(term, dialect=dialect).label("excerpt"),
                            (_start(term, dialect=dialect) - 1).label("offset"))
                     .join_from(ids, A, A.id == ids.c.id))
    out: Select[Any] = (parts[0] if len(parts) == 1
                        else union_all(*parts).subquery("hits").select())
    return out


def to_hits(rows: Sequence[Any]) -> list[Hit]:
    """The rows of :func:`lookup_query` as hits."""
    return [Hit(int(r.cue), int(r.id), str(r.role), r.created_at, str(r.excerpt or ""),
                bool(r.tool) or r.role == "tool", int(r.offset or 0)) for r in rows]
