"""``build_context``: the context for the chat app's next Claude call, read in one
snapshot and assembled by :func:`worker.core.assemble.assemble` (see there for
how the stored window becomes a valid Messages API request)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Select, Text, cast, literal, null, select, union_all

from models import ChatMessage, ChatSession
from worker.core.assemble import Context, Row, as_request, assemble, system_text
from worker.core.recall import Candidate, query_terms, topic_terms
from worker.core.validate import check_session_id, text_or_raise
from worker.db import transaction
from worker.errors import InvalidInput, SessionNotFound
from worker.llm.tokens import count_tokens
from worker.settings import get_settings
from worker.store.recall import MAX_CANDIDATES, candidates_query, scopes, to_candidates

__all__ = ["Context", "Window", "as_request", "build_context", "read_window", "render_json",
           "system_text"]


class Window(NamedTuple):
    """One snapshot of a session: what :func:`assemble_window` needs."""

    summary: str | None
    summary_tokens: int
    rows: list[Row]
    budget: int
    scopes: tuple[str, ...]  # whose memories (worker.store.recall.scopes)
    memories: tuple[Candidate, ...] = ()
    # The few most relevant to the newest user turn, shown besides the block chosen
    # per summary version (RECAP_MEMORY_REPLY_TOKENS).
    topical: tuple[Candidate, ...] = ()


def _snapshot_query(session_id: str) -> Select[Any]:
    # One statement, not two in one transaction: under PostgreSQL's default READ
    # COMMITTED every statement takes its own snapshot, so a summary applied
    # between two SELECTs would show both the summary and the rows it deleted,
    # or neither. A single statement always sees one snapshot.
    head = select(literal(0).label("kind"), literal(0).label("id"),
                  literal("session").label("role"),
                  ChatSession.rolling_summary.label("content"),
                  ChatSession.summary_tokens.label("tokens"),
                  cast(ChatSession.overrides, Text).label("overrides"),
                  ChatSession.user_id.label("user_id"),
                  null().cast(Text).label("blocks")
                  ).where(ChatSession.id == session_id)
    body = select(literal(1), ChatMessage.id, ChatMessage.role, ChatMessage.content,
                  ChatMessage.token_count, null().cast(Text), null().cast(Text),
                  cast(ChatMessage.blocks, Text)
                  ).where(ChatMessage.session_id == session_id)
    return union_all(head, body).order_by("kind", "id")  # type: ignore[return-value]


def read_window(session_id: str) -> Window:
    """The session's rolling summary, active rows (oldest first), context budget and
    memories; summary and rows are one snapshot.

    Raises InvalidInput for a bad id, SessionNotFound for an unknown one.
    """
    check_session_id(session_id)
    with transaction() as s:
        window = window_of(session_id, s.execute(_snapshot_query(session_id)).all())
        dialect = s.get_bind().dialect.name
        # Later statements, so possibly a later snapshot than the first: their
        # queries need the summary and newest user turn the first one returns. An
        # apply committed in between adds the memories mined from rows the window
        # still shows verbatim (a fact shown twice, never one lost) or hides a
        # memory it superseded (the newer truth): memories are never taken from
        # the window, so the reads cannot lose anything between them.
        for kind, query, terms in memories_queries(window, dialect=dialect):
            window = with_memories(window, kind, s.execute(query).all(), terms,
                                   dialect=dialect)
    return window


def window_of(session_id: str, result: Sequence[Any]) -> Window:
    """:func:`read_window`'s answer from the rows of :func:`_snapshot_query`, without
    memories (shared with the asyncio API, worker.api.aio)."""
    if not result or result[0].kind != 0:
        raise SessionNotFound(f"no chat session with id {session_id!r}")
    head, rows = result[0], result[1:]
    overrides = json.loads(head.overrides) if head.overrides else None
    budget = (overrides or {}).get("context_budget_tokens",
                                   get_settings().context_budget_tokens)
    return Window(head.content, int(head.tokens or 0),
                  [Row(r.role, r.content, int(r.tokens),
                       json.loads(r.blocks) if r.blocks is not None else None)
                   for r in rows], int(budget),
                  scopes(session_id, head.user_id))


def recall_on() -> bool:
    """Whether contexts carry memories (RECAP_MEMORY_BUDGET_TOKENS > 0)."""
    return get_settings().memory_budget_tokens > 0


# Candidates read for the per-reply part: it shows a handful.
TOPICAL_CANDIDATES = 20


def memories_queries(window: Window, *, dialect: str
                     ) -> list[tuple[str, Select[Any], list[str]]]:
    """(kind, statement, query terms) for each memories read :func:`with_memories`
    takes: none when the block is off; ``memories`` ranked by the summary (or,
    before the first fold, the first user turn), which changes only when a fold
    does, so the block is the same on every reply in between and may sit in the
    cached prefix; and ``topical``, the few most relevant to the newest user turn
    (RECAP_MEMORY_REPLY_TOKENS > 0). With RECAP_MEMORIES_PER=reply, ``memories``
    is ranked by the newest user turn and there is no ``topical`` read."""
    if not recall_on():
        return []
    settings = get_settings()
    newest = next((r.content for r in reversed(window.rows) if r.role == "user"), "")
    if settings.memories_per == "reply":
        terms = query_terms(newest)
        return [("memories", candidates_query(window.scopes, terms, dialect=dialect), terms)]
    first = next((r.content for r in window.rows if r.role == "user"), "")
    terms = topic_terms(window.summary or first)
    out = [("memories", candidates_query(window.scopes, terms, dialect=dialect), terms)]
    asked = query_terms(newest)
    if settings.memory_reply_tokens > 0 and asked:
        # SQLite scores relevance after the read (word overlap in Python), so there it
        # reads as many candidates as the main block does.
        limit = TOPICAL_CANDIDATES if dialect == "postgresql" else MAX_CANDIDATES
        out.append(("topical", candidates_query(window.scopes, asked, dialect=dialect,
                                                limit=limit), asked))
    return out


def with_memories(window: Window, kind: str, rows: Sequence[Any], terms: list[str], *,
                  dialect: str) -> Window:
    """``window`` with the memories read by one of :func:`memories_queries`."""
    found = to_candidates(rows, terms, dialect=dialect)
    if kind == "topical":  # only what the question is about, not the best-known facts
        return window._replace(topical=tuple(c for c in found if c.rank > 0))
    return window._replace(memories=tuple(found))


def build_context(session_id: str, *, system_prompt: str,
                  prompt_caching: bool | None = None) -> Context:
    """The system prompt and messages for the session's next Claude call.

    Pass ``**as_request(ctx)`` to the SDK, never ``**ctx`` (``tokens`` and
    ``budget`` are not API fields). ``prompt_caching`` (default
    RECAP_PROMPT_CACHING) returns ``system`` and the last turn as content blocks
    with ``cache_control`` breakpoints; False gives plain strings
    (:func:`worker.core.assemble.mark_cache_breakpoints`). Raises InvalidInput
    for a bad id or a non-str ``system_prompt``, SessionNotFound for an unknown
    session.
    """
    check_system_prompt(system_prompt)
    return assemble_window(system_prompt, read_window(session_id), prompt_caching)


def check_system_prompt(system_prompt: object) -> None:
    """Raise InvalidInput unless ``system_prompt`` is storable text ("" is fine)."""
    if not isinstance(system_prompt, str):
        raise InvalidInput(f"system_prompt must be a str, got {type(system_prompt).__name__}")
    text_or_raise(system_prompt, "system_prompt")


def assemble_window(system_prompt: str, window: Window,
                    prompt_caching: bool | None = None) -> Context:
    """The context from the app's prompt and a :func:`read_window` answer
    (``prompt_caching``: None means RECAP_PROMPT_CACHING)."""
    settings = get_settings()
    caching = settings.prompt_caching if prompt_caching is None else prompt_caching
    return assemble(system_prompt, window.rows, summary=window.summary,
                    summary_tokens=window.summary_tokens, budget=window.budget,
                    count=count_tokens, memories=window.memories,
                    memory_budget=settings.memory_budget_tokens, caching=bool(caching),
                    memories_cached=settings.memories_per == "version",
                    topical=window.topical, topical_budget=settings.memory_reply_tokens)


def render_json(session_id: str, system_prompt: str = "") -> str:
    """The context as pretty JSON, for ``recap context SESSION_ID [--system FILE]``."""
    return json.dumps(build_context(session_id, system_prompt=system_prompt), indent=2,
                      ensure_ascii=False)
