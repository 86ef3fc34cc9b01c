"""``build_context``: the context for the chat app's next Claude call, read in one
snapshot and assembled by :func:`worker.core.assemble.assemble` (see there for
how the stored window becomes a valid Messages API request)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, Text, cast, literal, null, select, union_all

from models import ChatMessage, ChatSession
from worker.core.assemble import Context, Row, as_request, assemble, system_text
from worker.core.validate import check_session_id, text_or_raise
from worker.db import transaction
from worker.errors import InvalidInput, SessionNotFound
from worker.llm.tokens import count_tokens
from worker.settings import get_settings

__all__ = ["Context", "as_request", "build_context", "read_window", "render_json",
           "system_text"]


def _snapshot_query(session_id: str) -> Select[Any]:
    # One statement, not two in one transaction: under PostgreSQL's default READ
    # COMMITTED every statement takes its own snapshot, so a summary applied
    # between two SELECTs would show both the summary and the rows it deleted,
    # or neither. A single statement always sees one snapshot.
    head = select(literal(0).label("kind"), literal(0).label("id"),
                  literal("session").label("role"),
                  ChatSession.rolling_summary.label("content"),
                  ChatSession.summary_tokens.label("tokens"),
                  cast(ChatSession.overrides, Text).label("overrides")
                  ).where(ChatSession.id == session_id)
    body = select(literal(1), ChatMessage.id, ChatMessage.role, ChatMessage.content,
                  ChatMessage.token_count, null().cast(Text)
                  ).where(ChatMessage.session_id == session_id)
    return union_all(head, body).order_by("kind", "id")  # type: ignore[return-value]


def read_window(session_id: str) -> tuple[str | None, int, list[Row], int]:
    """(rolling summary, its stored tokens, active rows oldest first, the session's
    context budget); summary and rows are one snapshot.

    Raises InvalidInput for a bad id, SessionNotFound for an unknown one.
    """
    check_session_id(session_id)
    with transaction() as s:
        result = s.execute(_snapshot_query(session_id)).all()
    return window_of(session_id, result)


def window_of(session_id: str, result: Sequence[Any]) -> tuple[str | None, int, list[Row], int]:
    """:func:`read_window`'s answer from the rows of :func:`_snapshot_query` (shared
    with the asyncio API, worker.api.aio)."""
    if not result or result[0].kind != 0:
        raise SessionNotFound(f"no chat session with id {session_id!r}")
    head, rows = result[0], result[1:]
    overrides = json.loads(head.overrides) if head.overrides else None
    budget = (overrides or {}).get("context_budget_tokens",
                                   get_settings().context_budget_tokens)
    return (head.content, int(head.tokens or 0),
            [Row(r.role, r.content, int(r.tokens)) for r in rows], int(budget))


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


def assemble_window(system_prompt: str, window: tuple[str | None, int, list[Row], int],
                    prompt_caching: bool | None = None) -> Context:
    """The context from the app's prompt and a :func:`read_window` answer
    (``prompt_caching``: None means RECAP_PROMPT_CACHING)."""
    summary, summary_tokens, rows, budget = window
    caching = get_settings().prompt_caching if prompt_caching is None else prompt_caching
    return assemble(system_prompt, rows, summary=summary, summary_tokens=summary_tokens,
                    budget=budget, count=count_tokens, caching=bool(caching))


def render_json(session_id: str, system_prompt: str = "") -> str:
    """The context as pretty JSON, for ``recap context SESSION_ID [--system FILE]``."""
    return json.dumps(build_context(session_id, system_prompt=system_prompt), indent=2,
                      ensure_ascii=False)
