"""``build_context``: the context for the chat app's next Claude call, read in one
snapshot and assembled by :func:`recap.core.context.assemble.assemble` (see there for
how the stored window becomes a valid Messages API request). The sync driver of
the reply core (:mod:`recap.api.core`)."""

from __future__ import annotations

import json

from sqlalchemy.orm import Session

from recap.api.passages import passages_read, with_passages
from recap.api.window import (
    Window,
    assemble_window,
    check_system_prompt,
    memories_queries,
    own_stubs_read,
    snapshot_query,
    window_of,
    with_memories,
    with_own_stubs,
)
from recap.core.context.assemble import Context, system_text
from recap.core.context.request import as_request
from recap.core.validate import check_session_id
from recap.db import transaction
from recap.llm.tokens import count_tokens
from recap.settings import get_settings

__all__ = ["Context", "Window", "as_request", "build_context", "read_window", "render_json",
           "system_text"]


def read_window(session_id: str, *, db: Session | None = None) -> Window:
    """The session's rolling summary, active rows (oldest first), context budget and
    memories; summary and rows are one snapshot. With ``db``, in the caller's
    transaction (recap.warm_up's rehearsal), else in one of its own.

    Raises InvalidInput for a bad id, SessionNotFound for an unknown one.
    """
    check_session_id(session_id)
    if db is not None:
        return _read(session_id, db)
    with transaction() as s:
        return _read(session_id, s)


def _read(session_id: str, s: Session) -> Window:
    settings = get_settings()
    # Row by row, not one fetchall: a window can hold megabytes, and one C call
    # decoding them all would hold the GIL throughout (the asyncio API reads in a
    # thread beside the app's event loop).
    window = window_of(session_id, list(s.execute(snapshot_query(session_id))),
                       default_budget=settings.context_budget_tokens)
    dialect = s.get_bind().dialect.name
    # Which stubs Recap wrote, before recall reads the window: only those are stubs.
    # A later statement than the snapshot, which errs only one way: a stub whose
    # original went in between (a rewind, a forget) is shown as data, never a
    # forged one as Recap's.
    archived = own_stubs_read(window)
    if archived is not None:
        window = with_own_stubs(window, s.execute(archived.query, archived.values).all())
    # Later statements, so possibly a later snapshot than the first: their queries
    # need the summary and newest user turn the first one returns. An apply
    # committed in between adds the memories mined from rows the window still
    # shows verbatim (a fact shown twice, never one lost) or hides a memory it
    # superseded (the newer truth): memories are never taken from the window, so
    # the reads cannot lose anything between them.
    for read in memories_queries(window, dialect=dialect, settings=settings):
        rows = s.execute(read.query, read.values).all()
        window = with_memories(window, read, rows, dialect=dialect)
    # The passages of the archived messages recall chose: which ones, the read above tells.
    follow = passages_read(window)
    if follow is not None:
        window = with_passages(window, s.execute(follow.query, follow.values).all())
    return window


def build_context(session_id: str, *, system_prompt: str,
                  prompt_caching: bool | None = None) -> Context:
    """The system prompt and messages for the session's next Claude call.

    Pass ``**as_request(ctx)`` to the SDK, never ``**ctx`` (``tokens`` and
    ``budget`` are not API fields). ``prompt_caching`` (default
    RECAP_PROMPT_CACHING) returns ``system`` and the last turn as content blocks
    with ``cache_control`` breakpoints; False gives plain strings
    (:func:`recap.core.context.assemble.mark_cache_breakpoints`). Raises InvalidInput
    for a bad id or a non-str ``system_prompt``, SessionNotFound for an unknown
    session.
    """
    check_system_prompt(system_prompt)
    return assemble_window(system_prompt, read_window(session_id), settings=get_settings(),
                           count=count_tokens, prompt_caching=prompt_caching)


def render_json(session_id: str, system_prompt: str = "") -> str:
    """The context as pretty JSON, for ``recap context SESSION_ID [--system FILE]``."""
    return json.dumps(build_context(session_id, system_prompt=system_prompt), indent=2,
                      ensure_ascii=False)
