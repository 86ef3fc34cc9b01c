"""The passage of an archived message that a turn is about (pure): recall's quote
when a cue selected a tool result, a document or a long turn.

The cue is on one line; the answer is often on another (the path a log names
twenty lines later, the hash pinned beside it). :func:`passage` ranks the lines
of the stretch read around the cue (:mod:`recap.store.lookback`) by every key of
the newest turn (:func:`recap.core.context.forms.asked_keys`: dates, numbers,
identifiers and word forms folded), BM25-like: a key found on few lines counts
more, a long line a little less. A line's shape (a path or ``file:line``, a hash,
a date, a long number) and its nearness to a line naming the cue add to it.
:func:`render` quotes, within the tokens it is given, the whole message when it
fits, else the best lines in their order with ``…`` where lines are left out,
after what says what the output is (the tool call it answers). Linear in the
text read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from recap.core.context.forms import line_keys
from recap.core.defuse import defuse_quoted

# Lines within this many of a line naming the cue are near it, the nearest most.
NEAR_LINES = 40
NEAR_WEIGHT = 2.0
# What a line's shape adds: it states where (a path, file:line), which (a hash),
# when (a date) or how much (a number of three digits or more).
SHAPE_WEIGHT = 1.0
# A line that holds none of the turn's words is quoted for its shape only near the
# cue, and for nearness alone only as the cue line's neighbour.
NEIGHBOUR = 1
# A line scoring below this share of the best line's is not worth its tokens.
MIN_SHARE = 0.1
# BM25's saturation of a key's weight by the line's length (one occurrence each).
K1 = 1.2
B = 0.75
# A quoted line longer than this is cut (the start kept, an ellipsis after).
MAX_LINE_CHARS = 400
# Best lines read for a key of the turn besides the cue's (Passage.answers).
MAX_ANSWER_LINES = 12
# Characters of the tool call quoted as what the output is.
MAX_CALL_CHARS = 300
GAP = "…"
# Below this many tokens left, no further line is tried.
MIN_LINE_TOKENS = 4
# Times the chosen lines are counted joined, the least dropped each time it is over.
RECOUNTS = 8

_PATH = re.compile(r"[\w.-]/[\w.-]|\w\.[A-Za-z]{1,5}(?::\d+)?\b")
_HASH = re.compile(r"\b(?=[0-9a-f]{0,63}[a-f])(?=[0-9a-f]{0,63}\d)[0-9a-f]{7,64}\b")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b")
_LONG_NUMBER = re.compile(r"\d{3}")


@dataclass(frozen=True)
class Source:
    """A stretch of one archived message read for its passage."""

    id: int
    text: str  # the stretch read
    offset: int  # where it starts in the message (0: at its start)
    length: int  # the message's length: the stretch is whole when it spans it
    call: str | None = None  # the tool call this output answers, rendered

    @property
    def whole(self) -> bool:
        return self.offset == 0 and len(self.text) >= self.length


@dataclass(frozen=True)
class Passage:
    """The lines of one archived message to quote: ``lines`` in their order,
    ``order`` the indexes of those worth quoting, best first."""

    label: str  # where it came from (recall's label)
    lines: tuple[str, ...]  # defused, in the message's order
    order: tuple[int, ...]
    whole: bool  # ``lines`` are the whole message
    call: str | None = None  # what the output is: the tool call it answers
    message_id: int = 0
    channel: str = ""  # the label's channel alone (recap.core.memories.channels)
    # A line worth quoting holds a key of the turn besides the cue's: the message
    # says something the turn asks beyond the name it was found by.
    answers: bool = True


def shape(line: str) -> float:
    """What ``line``'s shape says it states: a path, hash, date, long number."""
    found = (_PATH.search(line), _HASH.search(line), _DATE.search(line),
             _LONG_NUMBER.search(line))
    return SHAPE_WEIGHT * sum(1 for f in found if f is not None)


def split_lines(source: Source) -> list[tuple[int, int]]:
    """(start, end) in ``source.text`` of its whole lines: a line the stretch cuts
    at either end is left out."""
    text = source.text
    spans: list[tuple[int, int]] = []
    lo = 0
    while lo <= len(text):
        hi = text.find("\n", lo)
        hi = len(text) if hi < 0 else hi
        spans.append((lo, hi))
        lo = hi + 1
    if source.offset > 0 and len(spans) > 1:
        spans = spans[1:]
    if source.offset + len(text) < source.length and len(spans) > 1:
        spans = spans[:-1]
    return spans


def scores(lines: Sequence[str], asked: Mapping[str, float], cue_keys: set[str]
           ) -> list[float]:
    """Each line's score: the BM25-like weight of the asked keys it holds, its
    shape, and its nearness to a line holding one of ``cue_keys``."""
    keys = [line_keys(line) & asked.keys() for line in lines]
    n = len(lines)
    df: dict[str, int] = {}
    for held in keys:
        for k in held:
            df[k] = df.get(k, 0) + 1
    idf = {k: math.log(1 + (n - d + 0.5) / (d + 0.5)) for k, d in df.items()}
    mean = max(1.0, sum(len(line) for line in lines) / max(1, n))
    near = _distances([bool(held & cue_keys) for held in keys])
    out: list[float] = []
    for line, held, d in zip(lines, keys, near, strict=True):
        norm = K1 * (1 - B + B * len(line) / mean)
        words = sum(asked[k] * idf[k] * (K1 + 1) / (1 + norm) for k in held)
        close = NEAR_WEIGHT * max(0.0, 1 - d / NEAR_LINES)
        form = shape(line) if words or close else 0.0
        out.append(words + form + close if words or form or d <= NEIGHBOUR else 0.0)
    return out


def _distances(marked: Sequence[bool]) -> list[int]:
    """Each index's distance to the nearest marked one (two passes)."""
    far = len(marked) + NEAR_LINES
    out = [far] * len(marked)
    last = -far
    for i, m in enumerate(marked):
        last = i if m else last
        out[i] = i - last
    last = 2 * far
    for i in range(len(marked) - 1, -1, -1):
        last = i if marked[i] else last
        out[i] = min(out[i], last - i)
    return out


def passage(source: Source, *, asked: Mapping[str, float], cue_keys: set[str],
            label: str, channel: str = "") -> Passage:
    """The passage of ``source`` for a turn with ``asked`` keys, the message
    selected by ``cue_keys`` (the keys of the cues it holds)."""
    spans = split_lines(source)
    raw = [source.text[lo:hi].rstrip() for lo, hi in spans]
    ranked = scores(raw, asked, cue_keys)
    floor = MIN_SHARE * max(ranked, default=0.0)
    order = sorted((i for i, s in enumerate(ranked) if s > 0 and s >= floor),
                   key=lambda i: (-ranked[i], i))
    others = asked.keys() - cue_keys
    answers = any(line_keys(raw[i]) & others for i in order[:MAX_ANSWER_LINES])
    lines = tuple(defuse_quoted(_cut(line)) for line in raw)
    call = defuse_quoted(_cut(source.call, MAX_CALL_CHARS)).replace("\n", " ") \
        if source.call else None
    return Passage(label, lines, tuple(order), source.whole, call, source.id, channel, answers)


def _cut(line: str, limit: int = MAX_LINE_CHARS) -> str:
    return line if len(line) <= limit else line[:limit].rstrip() + GAP


def render(p: Passage, *, room: int, count: Callable[[str], int]) -> tuple[str | None, int]:
    """(``p`` quoted in at most ``room`` tokens, its tokens): the whole message when
    it fits, else its best lines in order with ``…`` for what is left out; (None,
    0) when not even its best line fits."""
    head = f"- {p.label}" + (f" output of {p.call}" if p.call else "")
    shown = shown_lines(p, room=room, count=count, head=head, indent="\n  ")
    if shown is None:
        return None, 0
    text = head + "".join(f"\n  {line}" for line in shown)
    return text, count(text)


def shown_lines(p: Passage, *, room: int, count: Callable[[str], int], head: str = "",
                indent: str = "\n") -> list[str] | None:
    """The lines of ``p`` that ``head`` and they, each after ``indent``, fit in ``room``
    tokens: all of them when the whole message fits, else the best in order with
    ``…`` where lines are left out; None when not even the best line fits."""
    if p.whole and any(line.strip() for line in p.lines):
        if count(head + "".join(indent + line for line in p.lines)) <= room:
            return list(p.lines)
    taken: list[int] = []
    used = count(head)
    gap = count(indent + GAP)
    for i in p.order:
        if room - used < MIN_LINE_TOKENS:
            break
        cost = count(indent + p.lines[i]) + gap
        if used + cost <= room:
            taken.append(i)
            used += cost
    for _ in range(RECOUNTS):  # the joined text's count may differ from its parts' sum
        if not taken:
            break
        shown = _with_gaps(p.lines, sorted(taken))
        if count(head + "".join(indent + line for line in shown)) <= room:
            return shown
        taken.pop()  # the least of them
    return None


def _with_gaps(lines: Sequence[str], chosen: Sequence[int]) -> list[str]:
    """The ``chosen`` lines (in order), ``…`` where lines between them are left out."""
    out: list[str] = []
    last = -1
    for i in chosen:
        if (last >= 0 and i != last + 1) or (last < 0 and i > 0):
            out.append(GAP)
        out.append(lines[i])
        last = i
    if last < len(lines) - 1:
        out.append(GAP)
    return out
