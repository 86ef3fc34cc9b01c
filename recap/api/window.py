"""The reply core's ``build_context`` half (:mod:`recap.api.core` has the
writes): the one-snapshot read, the memories and archive reads and the assembly,
with no I/O.

:func:`snapshot_query` -> :func:`window_of` -> :func:`own_stubs_read` /
:func:`with_own_stubs` (which stubs are Recap's) -> :func:`memories_queries` /
:func:`with_memories` (the memories reads, then the archive lookup of recall,
:mod:`recap.core.context.lookback`) -> :func:`assemble_window`; the sync driver is
:mod:`recap.api.context`, the asyncio one :mod:`recap.api.aio`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy import (
    CompoundSelect,
    Integer,
    Select,
    Text,
    bindparam,
    cast,
    literal,
    null,
    select,
    union_all,
)

from recap.api.core import load_blocks
from recap.core.context import lookback
from recap.core.context.assemble import Context, Row, assemble, own_by_message
from recap.core.context.passages import Passage
from recap.core.memories.recall import Candidate, query_terms, topic_terms
from recap.core.planning import adaptive
from recap.core.retention import own_stubs
from recap.core.retention.details import details_lines
from recap.core.validate import text_or_raise
from recap.errors import InvalidInput, SessionNotFound
from recap.models import ArchivedMessage, ChatMessage, ChatSession
from recap.settings import Settings
from recap.store.lookback import lookup_query, to_hits
from recap.store.recall import MAX_CANDIDATES, candidates_query, scopes, to_candidates


class Window(NamedTuple):
    """One snapshot of a session: what :func:`assemble_window` needs."""

    summary: str | None
    summary_tokens: int
    rows: list[Row]
    budget: int
    scopes: tuple[str, ...]  # whose memories (recap.store.recall.scopes)
    memories: tuple[Candidate, ...] = ()
    # The few most relevant to the newest user turn, shown besides the block chosen
    # per summary version (RECAP_MEMORY_REPLY_TOKENS).
    topical: tuple[Candidate, ...] = ()
    policy: str | None = None  # the session's own RECAP_POLICY override, if any
    session_id: str = ""
    # Archived lines and passages the newest turn names (recap.core.context.lookback),
    # best first; the hits and cues they come from, for the passages read.
    recalled: tuple[str | Passage, ...] = ()
    summary_version: int = 0
    keep_recent: int | None = None  # the session's own RECAP_KEEP_RECENT override, if any
    recall_hits: tuple[lookback.Hit, ...] = ()
    recall_cues: tuple[lookback.Cue, ...] = ()
    # The blocks that are stubs Recap wrote, as (message id, block index)
    # (recap.core.retention.own_stubs): only these read as stubs.
    own_stubs: frozenset[tuple[int, int]] = frozenset()


def check_system_prompt(system_prompt: object) -> None:
    """Raise InvalidInput unless ``system_prompt`` is storable text ("" is fine)."""
    if not isinstance(system_prompt, str):
        raise InvalidInput(f"system_prompt must be a str, got {type(system_prompt).__name__}")
    text_or_raise(system_prompt, "system_prompt")


def snapshot_query(session_id: str) -> CompoundSelect[*tuple[Any, ...]]:
    """The session row and its active messages in ONE statement (:func:`window_of`).

    Not two in one transaction: under PostgreSQL's default READ COMMITTED every
    statement takes its own snapshot, so a summary applied between two SELECTs
    would show both the summary and the rows it deleted, or neither. A single
    statement always sees one snapshot.
    """
    head = select(literal(0).label("kind"), literal(0).label("id"),
                  literal("session").label("role"),
                  ChatSession.rolling_summary.label("content"),
                  ChatSession.summary_tokens.label("tokens"),
                  cast(ChatSession.overrides, Text).label("overrides"),
                  ChatSession.user_id.label("user_id"),
                  null().cast(Text).label("blocks"),
                  ChatSession.summary_version.label("version")
                  ).where(ChatSession.id == session_id)
    body = select(literal(1), ChatMessage.id, ChatMessage.role, ChatMessage.content,
                  ChatMessage.token_count, null().cast(Text), null().cast(Text),
                  cast(ChatMessage.blocks, Text), null().cast(Integer)
                  ).where(ChatMessage.session_id == session_id)
    return union_all(head, body).order_by("kind", "id")


def window_of(session_id: str, result: Sequence[Any], *, default_budget: int) -> Window:
    """The window from the rows of :func:`snapshot_query`, without memories; raises
    SessionNotFound when there is no session row."""
    if not result or result[0].kind != 0:
        raise SessionNotFound(f"no chat session with id {session_id!r}")
    head, rows = result[0], result[1:]
    overrides = json.loads(head.overrides) if head.overrides else None
    budget = (overrides or {}).get("context_budget_tokens", default_budget)
    return Window(head.content, int(head.tokens or 0),
                  [Row(r.role, r.content, int(r.tokens),
                       load_blocks(r.blocks) if r.blocks is not None else None, int(r.id))
                   for r in rows], int(budget),
                  scopes(session_id, head.user_id), policy=(overrides or {}).get("policy"),
                  session_id=session_id, summary_version=int(head.version or 0),
                  keep_recent=(overrides or {}).get("keep_recent"))


_ARCHIVED = (select(ArchivedMessage.id, ArchivedMessage.blocks)
             .where(ArchivedMessage.session_id == bindparam("sid"),
                    ArchivedMessage.id.in_(bindparam("ids", expanding=True))))


class ArchiveRead(NamedTuple):
    """The read of the archived originals of the window's messages that hold a
    block reading as a stub: its statement and values."""

    query: Select[Any]
    values: Mapping[str, Any]


def own_stubs_read(window: Window) -> ArchiveRead | None:
    """The one archive read that tells Recap's stubs from text that reads as one,
    for the messages holding a block that reads as a stub; None when none does
    (most replies: a pure check of each block's opening, no statement)."""
    ids = [r.id for r in window.rows
           if r.id is not None and r.blocks and own_stubs.holds_stub_like(r.blocks)]
    if not ids:
        return None
    return ArchiveRead(_ARCHIVED, {"sid": window.session_id, "ids": ids})


def with_own_stubs(window: Window, rows: Sequence[Any]) -> Window:
    """``window`` with the stubs Recap wrote, from the archived originals ``rows``
    of :func:`own_stubs_read` (id, blocks): a block is Recap's stub when it reads as
    a stub and differs from its archived original (recap.core.retention.own_stubs)."""
    originals = {int(r[0]): r[1] for r in rows if r[1]}
    found = frozenset((r.id, i) for r in window.rows if r.id in originals and r.blocks
                      for i in own_stubs.recaps(r.blocks, originals[r.id]))
    return window._replace(own_stubs=found)


# Candidates read for the per-reply part: it shows a handful.
TOPICAL_CANDIDATES = 20


class MemoriesRead(NamedTuple):
    """One memories read of :func:`memories_queries`: which part it fills, its
    statement, and the query terms its rows are scored by."""

    kind: str  # "memories", "topical" or "recall" (the archive lookup)
    query: Select[Any]
    terms: list[str]
    cues: tuple[lookback.Cue, ...] = ()  # recall's
    values: Mapping[str, str] | None = None  # bound by name at execution (recall's)


def memories_queries(window: Window, *, dialect: str, settings: Settings
                     ) -> list[MemoriesRead]:
    """The memories reads :func:`with_memories` takes: none when the block is off
    (RECAP_MEMORY_BUDGET_TOKENS=0); ``memories`` ranked by the summary (or, before
    the first fold, the first user turn), which changes only when a fold does, so
    the block is the same on every reply in between and may sit in the cached
    prefix; and ``topical``, the few most relevant to the newest user turn
    (RECAP_MEMORY_REPLY_TOKENS > 0). With RECAP_MEMORIES_PER=reply, ``memories``
    is ranked by the newest user turn and there is no ``topical`` read. Last, the
    archive lookup of :func:`recall_read`, if the newest turn names anything."""
    recall = recall_read(window, dialect=dialect, settings=settings)
    return [*_memory_reads(window, dialect=dialect, settings=settings),
            *([recall] if recall else [])]


def recall_read(window: Window, *, dialect: str, settings: Settings) -> MemoriesRead | None:
    """The archive lookup for what the newest user turn (and the input of the tool
    call being answered) names that the summary and the window do not hold; None
    when recall is off (RECAP_RECALL_TOKENS=0, RECAP_ARCHIVE_SUMMARIZED=false),
    before the first fold or cleared tool result, or when nothing is named."""
    if (settings.recall_tokens <= 0 or not settings.archive_summarized
            or not (window.summary or window.own_stubs)):
        return None
    asked, used = lookback.split_asked(window.rows)
    if not asked:
        return None
    # A name Recap's stub lists is looked up: the archive holds the lines around it.
    # What a stub Recap did not write names is the window's text like any other.
    own = own_by_message(window.own_stubs)
    context = "\n".join([window.summary or "", *(
        own_stubs.held_text(r.content, r.blocks, own.get(r.id, ()) if r.id is not None else ())
        for i, r in enumerate(window.rows) if i not in used)])
    chosen = lookback.cues(asked, context=context)
    if not chosen:
        return None
    query, values = lookup_query(window.session_id, chosen, dialect=dialect)
    return MemoriesRead("recall", query, [], tuple(chosen), values)


def _memory_reads(window: Window, *, dialect: str, settings: Settings) -> list[MemoriesRead]:
    if settings.memory_budget_tokens <= 0:
        return []
    newest = next((r.content for r in reversed(window.rows) if r.role == "user"), "")
    if settings.memories_per == "reply":
        terms = query_terms(newest)
        return [MemoriesRead("memories", candidates_query(window.scopes, terms,
                                                          dialect=dialect), terms)]
    first = next((r.content for r in window.rows if r.role == "user"), "")
    terms = topic_terms(window.summary or first)
    out = [MemoriesRead("memories", candidates_query(window.scopes, terms, dialect=dialect),
                        terms)]
    # Grammar and the words of asking name nothing: a memory matched only on "the"
    # is not about the question.
    asked = [t for t in query_terms(newest) if t not in lookback.STOP_WORDS]
    if settings.memory_reply_tokens > 0 and asked:
        # SQLite scores relevance after the read (word overlap in Python), so there it
        # reads as many candidates as the main block does.
        limit = TOPICAL_CANDIDATES if dialect == "postgresql" else MAX_CANDIDATES
        out.append(MemoriesRead("topical", candidates_query(window.scopes, asked,
                                                            dialect=dialect, limit=limit),
                                asked))
    return out


def with_memories(window: Window, read: MemoriesRead, rows: Sequence[Any], *,
                  dialect: str) -> Window:
    """``window`` with the memories (or archived lines) ``read`` returned (``rows``)."""
    if read.kind == "recall":
        hits = to_hits(rows)
        return window._replace(recalled=tuple(lookback.quotes(hits, read.cues)),
                               recall_hits=tuple(hits), recall_cues=read.cues)
    found = to_candidates(rows, read.terms, dialect=dialect)
    if read.kind == "topical":  # only what the question is about, not the best-known facts
        return window._replace(topical=tuple(c for c in found if c.rank > 0))
    return window._replace(memories=tuple(found))


def memories_budget(window: Window, *, settings: Settings) -> int:
    """Tokens of the memories block: RECAP_MEMORY_BUDGET_TOKENS, or under the adaptive
    policy (the session's or the deployment's) what its folds have condensed calls for."""
    if (window.policy or settings.policy) == "adaptive":
        size = adaptive.per_message(sum(r.token_count for r in window.rows), len(window.rows))
        return adaptive.memory_budget(window.summary_tokens,
                                      limit=settings.memory_budget_tokens, per_message=size)
    return settings.memory_budget_tokens


def assemble_window(system_prompt: str, window: Window, *, settings: Settings,
                    count: Callable[[str], int], prompt_caching: bool | None = None
                    ) -> Context:
    """The context from the app's prompt and a window (``prompt_caching``: None
    means RECAP_PROMPT_CACHING); ``count`` counts tokens."""
    caching = settings.prompt_caching if prompt_caching is None else prompt_caching
    ctx = assemble(system_prompt, window.rows, summary=window.summary,
                   summary_tokens=window.summary_tokens, budget=window.budget,
                   count=count, memories=window.memories,
                   memory_budget=memories_budget(window, settings=settings),
                   caching=bool(caching),
                   memories_cached=settings.memories_per == "version",
                   topical=window.topical, topical_budget=settings.memory_reply_tokens,
                   recalled=window.recalled, recall_room=max(0, settings.recall_tokens),
                   keep_recent=window.keep_recent or settings.keep_recent,
                   own_stubs=window.own_stubs)
    stored_parts(ctx, summary=window.summary, version=window.summary_version)
    return ctx


def stored_parts(ctx: Context, *, summary: str | None, version: int) -> None:
    """What only the stored session tells of ``ctx["parts"]``: the summary's version
    and whether it carries the details section of lines Recap kept verbatim."""
    if ctx["parts"]["summary"]:
        ctx["parts"]["summary_version"] = version
        ctx["parts"]["details"] = bool(details_lines(summary or ""))
