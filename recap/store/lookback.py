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
from collections.abc import Mapping, Sequence
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
from sqlalchemy.orm import aliased

from recap.core.content.render import parse_links
from recap.core.context.forms import spellings
from recap.core.context.lookback import (
    EXCERPT_BEFORE,
    EXCERPT_CHARS,
    PASSAGE_CHARS,
    PER_CUE,
    Cue,
    Hit,
)
from recap.core.context.passages import Source
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


def fts_match(term: str) -> str:
    """The FTS5 query of a cue: its phrase, OR its other spelling's, OR its stem as
    a prefix (:func:`recap.core.context.forms.spellings`)."""
    other, root = spellings(term)
    return " OR ".join([fts_phrase(term), *([fts_phrase(other)] if other else []),
                        *([f"{root}*"] if root else [])])


def prefix_query(root: str) -> str:
    """``root`` (letters only, from :func:`spellings`) as a tsquery prefix, or ""."""
    return f"{root}:*" if root.isalpha() else ""


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
            values[f"phrase_{i}"] = fts_match(cue.term)
        else:
            other, root = spellings(cue.term)
            values[f"other_{i}"] = other
            values[f"root_{i}"] = prefix_query(root)
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
            simple: Any = literal_column("'simple'")
            # The cue as written, OR its other spelling, OR its stem as a prefix
            # (an empty query matches nothing): each bound, none parsed as syntax
            # but the prefix, which is letters only.
            query = func.plainto_tsquery(simple, term).op("||")(
                func.plainto_tsquery(simple, bindparam(f"other_{i}", type_=Text))).op("||")(
                func.to_tsquery(simple, bindparam(f"root_{i}", type_=Text)))
            match = func.to_tsvector(simple, _indexed()).bool_op("@@")(query)
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


def passages_query(session_id: str, reads: Sequence[tuple[int, int]]
                   ) -> tuple[Select[Any], dict[str, Any]]:
    """Per (message id, start) of ``reads``, the stretch of that archived message of
    the session from ``start`` (``PASSAGE_CHARS`` characters), its length, its
    tool links, and the text of the newest earlier archived message that makes a
    tool call (the call a tool result answers, if archived): (id, text, offset,
    length, links, call). Raises ValueError without reads."""
    if not reads:
        raise ValueError("passages_query needs at least one message")
    values: dict[str, Any] = {"session_id": session_id}
    for i, (msg_id, start) in enumerate(reads):
        values[f"id_{i}"], values[f"start_{i}"] = msg_id, start
    return passages_statement(len(reads)), values


# Characters of the archived tool call read: its name and input come first.
CALL_CHARS = 2_000


@functools.cache
def passages_statement(reads: int) -> Select[Any]:
    """The statement of :func:`passages_query` for ``reads`` messages."""
    session = bindparam("session_id", type_=Text)
    call = aliased(A)
    caller = (select(func.substr(call.content, 1, CALL_CHARS))
              .where(call.session_id == session, call.id < A.id,
                     call.tool_links.like("%call:%"))
              .order_by(call.id.desc()).limit(1).correlate(A).scalar_subquery())
    parts = []
    for i in range(reads):
        start = bindparam(f"start_{i}", type_=Integer)
        parts.append(select(A.id, func.substr(_body(), start + 1, PASSAGE_CHARS).label("text"),
                            start.label("offset"), func.length(_body()).label("length"),
                            A.tool_links.label("links"), caller.label("call"))
                     .where(A.session_id == session,
                            A.id == bindparam(f"id_{i}", type_=Integer)))
    out: Select[Any] = (parts[0] if len(parts) == 1
                        else union_all(*parts).subquery("read").select())
    return out


def to_sources(rows: Sequence[Any], *, calls: Mapping[str, str] | None = None
               ) -> dict[int, Source]:
    """The rows of :func:`passages_query` as sources by id, each with the tool call
    it answers: from the archived call's text, else from ``calls`` (tool_use id to
    its rendering, the calls the window still holds)."""
    out: dict[int, Source] = {}
    for r in rows:
        _, answers = parse_links(r.links)
        out[int(r.id)] = Source(int(r.id), str(r.text or ""), int(r.offset or 0),
                                int(r.length or 0),
                                call_of(answers, str(r.call or ""), calls or {}))
    return out


def call_of(answers: Sequence[str], archived: str, window: Mapping[str, str]) -> str | None:
    """The rendering of the first tool call ``answers`` names: its line in the
    ``archived`` call's text (``[tool call NAME (ID): ...]``), else in ``window``."""
    for ident in answers:
        marker = f"({ident}): "
        at = archived.find(marker)
        if at >= 0:
            start = archived.rfind("[tool call ", 0, at)
            end = archived.find("\n", at)
            return archived[max(0, start):len(archived) if end < 0 else end]
        if ident in window:
            return window[ident]
    return None
