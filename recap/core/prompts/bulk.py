"""Excerpts of pasted bulk content, for what the summarizer is sent (pure).

Users paste logs, configs, tables and stack traces; in the demo conversation
most tokens are inside such blocks, and each condensed message is sent to the
model once, in full. The retention guard (recap.core.specifics) requires of a
bulk block only its first non-empty line, plus what the surrounding prose
mentions, which the prose carries itself. So a block above a token cap is sent
as an excerpt: its fences, its lines up to the first non-empty one, every line
holding a specific the message's prose mentions, then the last line and the
first lines while they fit the cap. Each run of left-out lines becomes one
marker line (:data:`MARKER`), unless the marker would cost more than the run.

The excerpt reads exactly as the original to
:func:`~recap.core.specifics.extract_specifics`: blocks are found by the same
:func:`~recap.core.specifics.segments`, every line it reads is kept, and the
marker is indented four spaces, so inside an unfenced run it is one more bulk
line of the run (never prose, whose digits would become required specifics),
and inside a fenced block it never comes before the first non-empty line.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from typing import NamedTuple

from recap.core.prompts.summarize import Turn
from recap.core.specifics import Segment, contains, extract_specifics, lead, segments

MARKER = "    [... {n} {lines} of this block not sent to the summarizer ...]"


class Excerpt(NamedTuple):
    """The text to send, the lines it leaves out and the blocks they came from."""

    text: str
    lines_left_out: int
    blocks_cut: int


def excerpt_bulk(text: str, *, max_tokens: int, count: Callable[[str], int]) -> Excerpt:
    """``text`` with each bulk block above ``max_tokens`` (``count`` of its lines
    joined) cut to an excerpt; prose and smaller blocks are kept byte for byte.

    ``max_tokens <= 0``: off, ``text`` unchanged. The lines always kept (fences,
    up to the first non-empty line, lines holding a specific the prose mentions)
    may exceed the cap; the others are added only while each fits it.
    """
    if max_tokens <= 0:
        return Excerpt(text, 0, 0)
    lines = text.split("\n")
    # Blocks are found in the normalized text, as extract_specifics reads it (a
    # newline composes with nothing, so line by line is the whole text's NFKC).
    norm = [unicodedata.normalize("NFKC", line) for line in lines]
    parts = list(segments(norm))
    if not any(seg.bulk for seg in parts):
        return Excerpt(text, 0, 0)
    mentioned = extract_specifics("\n".join(norm[seg.start] for seg in parts if not seg.bulk),
                                  whole=True)
    out: list[str] = []
    left_out = blocks = 0
    for seg in parts:
        block = lines[seg.start:seg.stop]
        if seg.bulk and count("\n".join(block)) > max_tokens:
            kept = _keep(lines, norm, seg, mentioned=mentioned, max_tokens=max_tokens,
                         count=count)
            excerpt, n = _excerpt(lines, seg, kept, count)
            if n:
                out += excerpt
                left_out, blocks = left_out + n, blocks + 1
                continue
        out += block
    if not blocks:
        return Excerpt(text, 0, 0)
    return Excerpt("\n".join(out), left_out, blocks)


def _keep(lines: Sequence[str], norm: Sequence[str], seg: Segment, *,
          mentioned: frozenset[str], max_tokens: int, count: Callable[[str], int]) -> set[int]:
    body = seg.body()
    first = lead(norm, seg)
    kept = set(range(seg.start, seg.stop)) - set(body)  # the fences
    kept |= set(range(body.start, body.stop if first is None else first + 1))
    kept |= {i for i in body if any(contains(lines[i], s) for s in mentioned)}
    used = sum(count(lines[i]) for i in kept)
    # The last line goes before the head: a trace's exception, a log's final state.
    tail = [body.stop - 1] if body else []
    for i in [*tail, *body]:
        if i in kept:
            continue
        tokens = count(lines[i])
        if used + tokens <= max_tokens:
            kept.add(i)
            used += tokens
        elif i not in tail:
            break  # the head stays one unbroken run of lines
    return kept


def _excerpt(lines: Sequence[str], seg: Segment, kept: set[int],
             count: Callable[[str], int]) -> tuple[list[str], int]:
    out: list[str] = []
    left_out = 0
    gap: list[str] = []
    for i in range(seg.start, seg.stop + 1):
        if i < seg.stop and i not in kept:
            gap.append(lines[i])
            continue
        if gap:
            marker = MARKER.format(n=len(gap), lines="line" if len(gap) == 1 else "lines")
            if count("\n".join(gap)) > count(marker):
                out.append(marker)
                left_out += len(gap)
            else:  # the marker would cost more than what it leaves out
                out += gap
            gap = []
        if i < seg.stop:
            out.append(lines[i])
    return out, left_out


def excerpt_turns(turns: Sequence[Turn], *, max_tokens: int,
                  count: Callable[[str], int]) -> tuple[list[Turn], str]:
    """``turns`` with their bulk blocks excerpted (:func:`excerpt_bulk`), and a short
    note for the run's reason ("" when nothing was left out)."""
    out: list[Turn] = []
    left_out = blocks = 0
    for turn in turns:
        cut = excerpt_bulk(turn.content, max_tokens=max_tokens, count=count)
        out.append(Turn(turn.id, turn.role, cut.text) if cut.blocks_cut else turn)
        left_out, blocks = left_out + cut.lines_left_out, blocks + cut.blocks_cut
    if not blocks:
        return out, ""
    return out, (f"bulk: {left_out} lines of {blocks} pasted "
                 f"{'block' if blocks == 1 else 'blocks'} not sent")
