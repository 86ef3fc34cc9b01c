"""The second read of recall (no I/O here): the passages of the archived messages
the cues selected, after :func:`recap.api.window.with_memories` has ranked them.

:func:`passages_read` -> (the driver runs it) -> :func:`with_passages`: the best
:data:`recap.core.context.lookback.PASSAGES` messages are read as a stretch of
their text around the cue with the tool call each answers
(:func:`recap.store.lookback.passages_query`), and quoted as the passage the
newest turn is about (:mod:`recap.core.context.passages`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Select

from recap.api.window import Window
from recap.core.context import lookback
from recap.store.lookback import passages_query, to_sources

# Characters of a tool call's input quoted from the window (the archived ones are
# cut by the store): what it read or ran comes first.
CALL_INPUT_CHARS = 300


class PassagesRead(NamedTuple):
    """The statement of the passages read and its values."""

    query: Select[Any]
    values: dict[str, Any]


def passages_read(window: Window) -> PassagesRead | None:
    """The read of the passages of the messages recall chose; None when it chose none."""
    reads = lookback.passage_reads(window.recall_hits, window.recall_cues)
    if not reads:
        return None
    return PassagesRead(*passages_query(window.session_id, reads))


def with_passages(window: Window, rows: Sequence[Any]) -> Window:
    """``window`` quoting the passages ``rows`` (of :func:`passages_read`) hold, each
    ranked by the newest turn's keys."""
    asked, _ = lookback.split_asked(window.rows)
    sources = to_sources(rows, calls=window_calls(window))
    return window._replace(recalled=tuple(lookback.quotes(
        window.recall_hits, window.recall_cues, sources=sources,
        asked=lookback.asked_keys(asked))))


def window_calls(window: Window) -> dict[str, str]:
    """The tool calls the window's rows hold, by tool_use id, rendered as the
    archive renders them (``[tool call NAME (ID): {...}]``)."""
    out: dict[str, str] = {}
    for row in window.rows:
        for b in row.blocks or ():
            if b.get("type") == "tool_use" and len(out) < 1_000:
                args = json.dumps(b.get("input"), ensure_ascii=False, default=str)
                out[str(b.get("id"))] = (f"[tool call {b.get('name')} ({b.get('id')}): "
                                         f"{args[:CALL_INPUT_CHARS]}]")
    return out
