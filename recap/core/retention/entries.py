"""Entries of the retention guard: ``specific: context`` lines (pure).

A details line and a guard-made memory are both an *entry*: the specific, then a
few words around it in the text it was read from. An entry is never deeper than
one prefix: a context that starts with a bullet or with another entry's
``X: `` prefix loses it (:func:`peel`), and it is at most MAX_ENTRY_CHARS long.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from recap.core.memories.provenance import names
from recap.core.specifics import MAX_SPECIFIC_CHARS, contains, extract_specifics

CONTEXT_WORDS = 12
CONTEXT_CHARS = 40  # for text without spaces (Japanese, Chinese)
# An entry's context: at most this many characters (a dozen long words), so an
# entry stays one short line whatever the message looks like.
MAX_CONTEXT_CHARS = 160
MAX_ENTRY_CHARS = MAX_SPECIFIC_CHARS + 2 + MAX_CONTEXT_CHARS
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
# What an entry's context may start with that is not context: a bullet, or the
# ``specific: `` prefix of an entry it was read from.
_LEADER = re.compile(rf"\s*+(?:[-*•]\s++|(.{{1,{MAX_SPECIFIC_CHARS}}}?):\s++)")


def is_prefix(text: str) -> bool:
    """Whether ``text`` (what comes before a ``: ``) is a specific on its own."""
    text = text.strip()
    return bool(text) and text in extract_specifics(text, whole=True)


def peel(text: str) -> str:
    """``text`` without the bullets and entry prefixes (``X: ``) it starts with."""
    at = 0  # read on from here, never slicing: linear however many prefixes it has
    while True:
        m = _LEADER.match(text, at)
        if m is None or (m.group(1) is not None and not is_prefix(m.group(1))):
            return text[at:].strip()
        at = m.end()


def _bounded(specific: str, around: str) -> str:
    around = peel(around)
    if len(around) > MAX_CONTEXT_CHARS:
        at = max(0, around.casefold().find(specific.casefold()))
        lo = max(0, min(at - MAX_CONTEXT_CHARS // 3, len(around) - MAX_CONTEXT_CHARS))
        around = whole_tokens(around, lo, lo + MAX_CONTEXT_CHARS)
    return specific if not around or around == specific else f"{specific}: {around}"


def whole_tokens(text: str, lo: int, hi: int) -> str:
    """``text[lo:hi]`` without a token cut in two at either end (a path, a hash, a
    word): a partial token at an edge is left out, unless the stretch has no white
    space to cut at."""
    piece = text[lo:hi]
    if lo > 0 and not text[lo - 1].isspace() and not piece[:1].isspace():
        space = piece.find(" ")
        piece = piece[space + 1:] if space >= 0 else piece
    if hi < len(text) and not text[hi].isspace() and not piece[-1:].isspace():
        space = piece.rfind(" ")
        piece = piece[:space] if space > 0 else piece
    return piece.strip()


def tidy(line: str) -> str:
    """A details line carried from an earlier fold, one prefix deep and bounded (a
    line Recap wrote comes back unchanged; an older, deeper one is mended)."""
    m = _LEADER.match(line)
    if m is None or m.group(1) is None or not is_prefix(m.group(1)):
        return line if len(line) <= MAX_ENTRY_CHARS else line[:MAX_ENTRY_CHARS].rstrip()
    return _bounded(m.group(1).strip(), line[m.end():])


def context(text: str, specific: str) -> str:
    """A few words around ``specific`` in ``text``: its sentence, clipped to about
    CONTEXT_WORDS words (CONTEXT_CHARS characters where words have no spaces), or
    wider to hold the other specifics of the sentence with it while that stays
    within MAX_CONTEXT_CHARS."""
    text = unicodedata.normalize("NFKC", text)
    found = re.search(r"(?<![0-9A-Za-z])" + re.escape(specific) + r"(?![0-9A-Za-z])", text,
                      re.I) or re.search(re.escape(specific), text, re.I)
    if found is None:
        return specific
    at = found.start()
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    line = text[start:end if end >= 0 else len(text)]
    pos = at - start
    bounds = [0, *(m.end() for m in _SENTENCE_END.finditer(line)), len(line)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        if a <= pos < b:
            line, pos = line[a:b], pos - a
            break
    words = line.split()
    if len(words) <= 1:  # no spaces to cut at
        lo = max(0, pos - CONTEXT_CHARS // 2)
        clip = line[lo:pos + len(specific) + CONTEXT_CHARS // 2].strip()
    else:
        index = len(line[:pos].split()) - (0 if line[:pos].endswith(" ") or not pos else 1)
        clip = " ".join(_with_neighbours(words, max(0, min(index, len(words) - 1))))
    return clip if contains(clip, specific) else specific


def _with_neighbours(words: list[str], index: int) -> list[str]:
    """The words of a sentence around ``words[index]`` (a specific's): first the
    other specifics and names of the sentence, nearest first (the path, hash or
    name stated next to it: "LGR-3621 shows up at tests/load.py:88"), as far as
    MAX_CONTEXT_CHARS allows, then plain words on both sides up to CONTEXT_WORDS.
    Whole words only: a window never cuts a path or a hash in two."""
    # Only words within MAX_CONTEXT_CHARS of the specific can join it: a line of a
    # hundred thousand numbers is read near the specific, not whole.
    first, last = _within_reach(words, index)
    words, index = words[first:last + 1], index - first
    lo, hi, size = _to_neighbours(words, index)
    return _padded(words, lo, hi, size)


def _within_reach(words: list[str], index: int) -> tuple[int, int]:
    """The first and last index of the words within MAX_CONTEXT_CHARS of ``words[index]``."""
    first = last = index
    reach = 0
    while first > 0 and reach + len(words[first - 1]) < MAX_CONTEXT_CHARS:
        first -= 1
        reach += len(words[first]) + 1
    reach = 0
    while last < len(words) - 1 and reach + len(words[last + 1]) < MAX_CONTEXT_CHARS:
        last += 1
        reach += len(words[last]) + 1
    return first, last


def _to_neighbours(words: list[str], index: int) -> tuple[int, int, int]:
    """``lo``, ``hi`` and the characters of ``words[lo:hi + 1]``: ``words[index]``
    widened to the other specifics and names of ``words``, nearest first, while
    the span stays within MAX_CONTEXT_CHARS (a side stops at its first that does not fit)."""
    named = names(" ".join(words))

    def holds(w: str) -> bool:
        w = w.strip(".,;:!?()[]\"'")
        return w in named or bool(extract_specifics(w, whole=True))

    lo = hi = index
    size = len(words[index])
    neighbours = sorted((j for j, w in enumerate(words) if j != index and holds(w)),
                        key=lambda j: (abs(j - index), j < index))
    blocked: set[bool] = set()  # the sides (left: True) where the next one did not fit
    for j in neighbours:
        left = j < index
        if left in blocked:
            continue  # a farther one on a side where a nearer one did not fit
        lo2, hi2 = min(lo, j), max(hi, j)
        grown = size + sum(len(w) + 1 for w in words[lo2:lo]) \
            + sum(len(w) + 1 for w in words[hi + 1:hi2 + 1])
        if grown <= MAX_CONTEXT_CHARS:
            lo, hi, size = lo2, hi2, grown
        else:
            blocked.add(left)
            if len(blocked) == 2:
                break
    return lo, hi, size


def _padded(words: list[str], lo: int, hi: int, size: int) -> list[str]:
    """``words[lo:hi + 1]`` (``size`` characters) padded with plain words on both
    sides, the right one first, up to CONTEXT_WORDS words within MAX_CONTEXT_CHARS."""
    left = True
    while hi - lo + 1 < CONTEXT_WORDS and (lo > 0 or hi < len(words) - 1):
        left = not left  # the right side first, then alternate
        j = lo - 1 if (left and lo > 0) or hi == len(words) - 1 else hi + 1
        if size + len(words[j]) + 1 > MAX_CONTEXT_CHARS:
            break
        size += len(words[j]) + 1
        lo, hi = min(lo, j), max(hi, j)
    return words[lo:hi + 1]


def entry(text: str, specific: str) -> str:
    """One line of the details section (and the text of a guard-made memory):
    ``specific: context``, one prefix deep, at most MAX_ENTRY_CHARS long."""
    return _bounded(specific, context(text, specific))


def entries_for(lost: Sequence[str], texts: Sequence[str],
                found: Sequence[frozenset[str]]) -> list[str]:
    """One :func:`entry` line per specific of ``lost`` (each read from the first of
    ``texts`` whose ``found`` holds it), but none for a specific an earlier line
    already carries: one sentence with several specifics ("flight TP1357, booking
    code QX7K2P") gives a line that holds them with their neighbours, not a line
    each whose window cuts the others."""
    out: list[str] = []
    for s in lost:
        if any(contains(line, s) for line in out):
            continue
        out.append(entry(next(t for t, f in zip(texts, found, strict=True) if s in f), s))
    return out


def restates(fact: str, lines: Sequence[str]) -> bool:
    """Whether a mined ``fact`` only restates an entry Recap itself kept (one of
    ``lines``, the previous details section, or any ``specific: context`` line):
    a model copying Recap's verbatim lines back makes no new memory."""
    text = " ".join(fact.split())
    if peel(text) != text:  # it starts with an entry's prefix or a bullet
        return True
    flat = {" ".join(x.split()).casefold() for line in lines
            for x in (tidy(line), line.partition(": ")[2]) if x}
    return text.casefold() in flat
