"""Which channel a stretch of a stored message came through (pure): the user's own
typed words, text they quoted or pasted, a document, a tool result, the assistant.

A label says ``user`` only for what the user typed themselves: in a user turn,
outside what they quote or paste (recap.core.memories.provenance.pasted_spans) or
paste as a block (a log, a table, code: :func:`bulk_spans`), and
before any document, search result or tool result the turn carries
(recap.core.content.render writes each as a ``[document ...``, ``[search result ...``
or ``[tool result for ...`` line, and what follows it may be that block's text).
When the stretch read does not start at the start of its message, what came
before it (an introduction, an opening quotation mark) is unknown, and the label
says so (``unverified``) rather than ``user``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from recap.core.memories.provenance import pasted_spans
from recap.core.specifics import segments

# From the least to the most foreign: a stretch takes the most foreign channel
# any part of it came through.
CHANNELS = ("user", "unverified", "quoted", "pasted", "document", "tool", "assistant")
# How each channel is named in a recalled line's label.
CHANNEL_LABELS = {
    "user": "user",
    "unverified": "user's message, not verified as their own words",
    "quoted": "quoted by the user",
    "pasted": "pasted by the user",
    "document": "document",
    "tool": "tool result",
    "assistant": "assistant",
}
# A block of a user turn as recap.core.content.render writes it: the rest of the message
# may be its text.
_RENDERED = re.compile(r"^\[(?:(document|search result)\b|(tool result) for )", re.M)


def bulk_spans(text: str) -> list[tuple[int, int, str]]:
    """The blocks of ``text`` that were pasted rather than typed, as (start, end,
    ``pasted``): two or more lines of a log, a table, a stack trace or indented code,
    and fenced blocks, as recap.core.specifics reads bulk (its :func:`segments`)."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    return [(starts[seg.start], starts[seg.stop] - 1, "pasted")
            for seg in segments(lines) if seg.bulk]


def typed_words(text: str) -> str:
    """``text`` (what the user wrote themselves: recap.core.memories.provenance.own_text)
    without its pasted blocks (:func:`bulk_spans`): a pasted log line is never the
    user's own statement, whatever it says."""
    out: list[str] = []
    at = 0
    for start, end, _ in bulk_spans(text):
        out.append(text[at:start])
        at = end
    out.append(text[at:])
    return "".join(out)


def foreign_spans(text: str) -> list[tuple[int, int, str]]:
    """The stretches of a user turn's rendering that are not the user's own typed
    words, as (start, end, channel)."""
    spans = pasted_spans(text) + bulk_spans(text)
    block = _RENDERED.search(text)
    if block is not None:
        spans.append((block.start(), len(text), "document" if block.group(1) else "tool"))
    return spans


def channel(text: str, stretches: Sequence[tuple[int, int]] = (), *, role: str,
            tool: bool = False, from_start: bool = True) -> str:
    """The channel (:data:`CHANNELS`) of ``stretches`` of ``text`` (all of it when
    none are given), a stored message of ``role`` or an excerpt of it
    (``from_start``: the excerpt starts where the message does); ``tool``: a
    turn of tool results."""
    if tool or role == "tool":
        return "tool"
    if role != "user":
        return role  # the assistant's (or a system row's) own words
    if not from_start:
        return "unverified"
    wanted = stretches or [(0, len(text))]
    worst = "user"
    for start, end, kind in foreign_spans(text):
        if (CHANNELS.index(kind) > CHANNELS.index(worst)
                and any(start < hi and lo < end for lo, hi in wanted)):
            worst = kind
    return worst
