"""Entries of the retention guard: ``specific: context`` lines (pure).

A details line and a guard-made memory are both an *entry*: the specific, then a
few words around it in the text it was read from. An entry is never deeper than
one prefix: a context that starts with a bullet or with another entry's
``X: `` prefix loses it (:func:`peel`), and it is at most MAX_ENTRY_CHARS long.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from recap.core.memories.provenance import names
from recap.core.specifics import (
    MAX_SPECIFIC_CHARS,
    Needles,
    carries,
    extract_specifics,
    search_key,
)

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


def bounded(specific: str, around: str) -> str:
    """The entry of ``specific`` read with ``around`` (its :func:`context`): one
    prefix deep, at most MAX_ENTRY_CHARS long."""
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
    return bounded(m.group(1).strip(), line[m.end():])


def context(text: str, specific: str) -> str:
    """A few words around ``specific`` in ``text``: its sentence, clipped to about
    CONTEXT_WORDS words (CONTEXT_CHARS characters where words have no spaces), or
    wider to hold the other specifics of the sentence with it while that stays
    within MAX_CONTEXT_CHARS. For many specifics of one text, :func:`contexts`."""
    return contexts(text, [specific])[specific]


def contexts(text: str, specifics: Iterable[str]) -> dict[str, str]:
    """:func:`context` of each of ``specifics`` in ``text``, the text normalised and
    read once for all of them (its lines, sentences and words are split once each
    as a specific first needs them): linear in the text however many there are."""
    return _Reading(text).contexts(specifics)


_WORD = re.compile(r"\S+")


def _fold(text: str) -> str:
    """``text`` with case ignored letter by letter, as a case-blind regular expression
    compares it: each letter's lower case (a dotted capital I is an i), every sigma
    alike; the same length, so a place in it is a place in ``text``."""
    low = text.lower()
    if len(low) != len(text):
        low = "".join(c.lower()[0] for c in text)
    return low.replace("ς", "σ")


def _glued(ch: str) -> bool:
    """Whether ``ch`` would run on into a specific (an ASCII letter or digit, in any
    case: a long s or a dotless i too)."""
    if ch.isascii():
        return ch.isalnum()
    return any(c.isascii() and c.isalnum() for c in (ch.upper(), ch.lower()))


class _Reading:
    """One text as :func:`contexts` reads it: normalised once, with the place of
    each specific found in one pass (:class:`recap.core.specifics.Needles`)."""

    def __init__(self, text: str) -> None:
        self.text = unicodedata.normalize("NFKC", text)
        self.low = _fold(self.text)
        self.breaks = [m.start() for m in re.finditer("\n", self.text)]
        self.sentences: dict[int, list[int]] = {}  # a line's start: its sentence bounds
        self.words: dict[tuple[int, int], list[int]] = {}  # a sentence: its words' starts

    def places(self, specifics: Iterable[str]) -> dict[str, int]:
        """Where each of ``specifics`` first stands on its own (no letter or digit
        glued to either end), else where it first occurs; absent ones are left out."""
        folded = {s: _fold(s) for s in specifics}
        needles = Needles(folded.values())
        low = self.low

        def alone(lo: int, hi: int) -> bool:
            return ((lo == 0 or not _glued(low[lo - 1]))
                    and (hi == len(low) or not _glued(low[hi])))
        at = needles.first(low, fits=alone)
        rest = set(folded.values()) - set(at)
        if rest:
            at.update(Needles(rest).first(low))
        return {s: at[f] for s, f in folded.items() if f in at}

    def contexts(self, specifics: Iterable[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(specifics))
        found = self.places(wanted)
        return {s: self.around(found[s], s) if s in found else s for s in wanted}

    def sentence(self, at: int) -> tuple[int, int]:
        """The start and end of the sentence holding place ``at`` (in the NFKC text)."""
        start, end = self._line(at)
        bounds = self._bounds(start, end)
        j = min(bisect.bisect_right(bounds, at - start), len(bounds) - 1) - 1
        return start + bounds[j], start + bounds[j + 1]

    def _line(self, at: int) -> tuple[int, int]:
        i = bisect.bisect_left(self.breaks, at)
        return (self.breaks[i - 1] + 1 if i else 0,
                self.breaks[i] if i < len(self.breaks) else len(self.text))

    def _bounds(self, start: int, end: int) -> list[int]:
        bounds = self.sentences.get(start)
        if bounds is None:
            line = self.text[start:end]
            bounds = [0, *(m.end() for m in _SENTENCE_END.finditer(line)), len(line)]
            self.sentences[start] = bounds
        return bounds

    def around(self, at: int, specific: str) -> str:
        """The context of ``specific``, found at ``at`` (:meth:`places`)."""
        text = self.text
        start, end = self._line(at)
        pos = at - start
        bounds = self._bounds(start, end)
        j = min(bisect.bisect_right(bounds, pos), len(bounds) - 1) - 1
        a, b = bounds[j], bounds[j + 1]
        line, pos = text[start + a:start + b], pos - a
        starts = self.words.get((start, a))
        if starts is None:
            starts = [m.start() for m in _WORD.finditer(line)]
            self.words[(start, a)] = starts
        if len(starts) <= 1:  # no spaces to cut at
            lo = max(0, pos - CONTEXT_CHARS // 2)
            clip = line[lo:pos + len(specific) + CONTEXT_CHARS // 2].strip()
        else:
            index = bisect.bisect_left(starts, pos) - (
                0 if not pos or line[pos - 1] == " " else 1)
            words = _words_near(line, starts, max(0, min(index, len(starts) - 1)))
            clip = " ".join(_with_neighbours(*words))
        return clip if carries(clip, specific) else specific


def _words_near(line: str, starts: list[int], index: int) -> tuple[list[str], int]:
    """The words of ``line`` (``starts``: where each begins) that can join its word
    ``index`` in a context, and that word's index among them: those within
    MAX_CONTEXT_CHARS of it counted as :func:`_within_reach` counts (a word and a
    space each, so at most half as many words on either side)."""
    reach = MAX_CONTEXT_CHARS // 2 + 1
    lo, hi = max(0, index - reach), min(len(starts), index + reach + 1)
    return line[starts[lo]:starts[hi] if hi < len(starts) else len(line)].split(), index - lo


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
    return bounded(specific, context(text, specific))


class Kept(NamedTuple):
    """An entry line, the index of the text it was read from (None: read from no
    text) and the stretch of that text (NFKC) its words come from: their sentence."""

    line: str
    source: int | None = None
    stretch: tuple[int, int] = (0, 0)


def entries_for(lost: Sequence[str], texts: Sequence[str],
                found: Sequence[frozenset[str]]) -> list[str]:
    """One :func:`entry` line per specific of ``lost`` (each read from the first of
    ``texts`` whose ``found`` holds it), but none for a specific an earlier line
    already carries: one sentence with several specifics ("flight TP1357, booking
    code QX7K2P") gives a line that holds them with their neighbours, not a line
    each whose window cuts the others. Each text is read once for all of them."""
    return [k.line for k in entries_at(lost, texts, found)]


def entries_at(lost: Sequence[str], texts: Sequence[str],
               found: Sequence[frozenset[str]]) -> list[Kept]:
    """:func:`entries_for`, each line with where it was read (:class:`Kept`)."""
    first: dict[str, int] = {}
    for i, f in enumerate(found):
        for s in f:
            first.setdefault(s, i)
    groups: dict[int, list[str]] = {}
    for s in lost:
        groups.setdefault(first[s], []).append(s)
    # Each text read once; a window is cut only for a specific no line holds yet.
    readings = {i: _Reading(texts[i]) for i in groups}
    places = {s: (i, at) for i, group in groups.items()
              for s, at in readings[i].places(group).items()}
    keys = {s: search_key(s) for s in lost}
    needles = Needles(keys.values())
    carried: set[str] = set()  # the keys of ``lost`` the lines so far hold
    out: list[Kept] = []
    for s in lost:
        if (keys[s] in carried) or (not keys[s] and out):
            continue
        if s in places:
            i, at = places[s]
            kept = Kept(bounded(s, readings[i].around(at, s)), i, readings[i].sentence(at))
        else:
            kept = Kept(bounded(s, s))
        out.append(kept)
        carried |= needles.held_by([kept.line])
    return out


def normalized(text: str) -> str:
    """``text`` as entries read it (NFKC): a :class:`Kept` stretch is a place in it."""
    return unicodedata.normalize("NFKC", text)


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
