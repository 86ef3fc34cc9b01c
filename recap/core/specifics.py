"""The specifics of a text: the details a summary must not lose (pure).

:func:`extract_specifics` returns the set of specifics of one message, summary
or fact, each *normalized* (below). What counts, exactly:

- **Prose and bulk.** Bulk content is: a fenced block (``` or ~~~ up to its
  closing fence, or the end of the text), and any run of two or more
  consecutive "bulk lines": table rows (starting with ``|``, or aligned columns:
  two gaps of 2+ spaces), indented code (4 spaces or a tab), JSON log lines
  (starting with ``{"``), log lines (starting, after an optional ``[``, with an ISO
  date ``2024-03-14``, a time ``09:41:07`` or a level such as ``ERROR``) and
  stack frames (``at ...``, ``File "...", line N``). A single such line is
  prose. From bulk only its first non-empty line counts (the error line of a
  trace, the path comment of a config); anything else in it counts only if the
  surrounding prose mentions it too, which it then does as prose. Everything
  else is prose.
- **In prose**, in this order (a matched piece is removed before the next rule):
  1. ``code spans`` of 1 to 60 characters: the span's text, whitespace collapsed;
     a longer span is read as prose.
  2. URLs (``http://``, ``https://``, ``ftp://``, ``www.``): casefolded.
  3. e-mail addresses: casefolded. Then markup tags (``<summary>``,
     ``</previous_summary>``, ``<message role="user">``) are dropped: a tag name
     (Recap's own delimiters echoed back, pasted HTML) is never a specific.
  4. A code written as an acronym, a space and a number (``TP 1357``), and an
     international phone number in groups (``+351 21 000 4242``), as written.
     Then dates, times and amounts written with words, each one specific as written
     (English and Spanish, the languages of the shipped prompts): ``3 March 2025``,
     ``March 3rd, 2025``, ``3 de marzo de 2025``, ``March 2025``, ``9:30 am``,
     ``9 pm``, ``89,99 €``, ``USD 40``, ``40 euros``, ``12 kg``, ``5 GB``, ``3 días``.
  5. The rest is cut at white space, at ``=``, at ``、。「」`` and other CJK
     punctuation, and at every CJK/kana/Hangul character except the units
     ``年月日時分秒円万億兆元件個回人歳号番`` (so ``2026年3月15日に`` gives
     ``2026年3月15日`` and ``価格は3,500円`` gives ``3,500円``); each piece loses
     leading ``([{<"'¿¡«“‘`` and trailing ``.,;:!?)]}>"'»”’…``. A piece that is a
     file path (``/a/b``, ``./a``, ``~/a``, ``C:\\a``, or ``dir/file.ext``) or
     carries a digit is a specific, kept as written.
- Pieces longer than 100 characters (hashes of blobs, base64) do not count.
- Normalization: NFKC first (full-width ``３,５００`` is ``3,500``), then the
  above. Numbers keep their separators as written.

:func:`contains` says whether a specific is present in a text (a summary, a
fact): after NFKC, casefolding, ignoring white space (``TP 1357`` and ``TP1357``,
``80 kg`` and ``80kg``, ``9:30am`` and ``9:30 am`` match each other) and dropping
thousands commas (a comma between digits followed by exactly three digits, so
``2,400`` and ``2400`` match each other; ``3.500`` matches only ``3.500``, a dot
being a decimal point in half the world), the specific must occur where it does
not run on into more letters or digits (``15`` is not present in ``150``; it is
in ``2026-03-15``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

MAX_SPECIFIC_CHARS = 100
MAX_CODE_SPAN_CHARS = 60

_FENCE = re.compile(r"^\s*(```|~~~)")
# Every pattern here runs in time linear in its input whatever it is sent (a pasted
# blob, a megabyte of digits): a repeat that could give back what it took is
# possessive (``*+``, ``++``) or starts only where its run starts (a look-behind),
# so no start position rescans a run another one already read.
_BULK_LINE = re.compile(
    r"^(?:\s*+\||(?: {4}|\t)\S|\s*+\{\"|\S++ {2,}+\S.*?(?<! ) {2,}+\S"
    r"|\s*\[?(?:\d{4}-\d{2}-\d{2}[T ]?\d|\d{1,2}:\d{2}:\d{2}"
    r"|(?:DEBUG|INFO|WARN|WARNING|ERROR|FATAL|TRACE|CRITICAL)\b)"
    r"|\s+at\s|\s*File \".*\", line \d+)")
_CODE_SPAN = re.compile(rf"`([^`\n]{{1,{MAX_CODE_SPAN_CHARS}}})`")
_URL = re.compile(r"\b(?:(?:https?|ftp)://|www\.)[^\s<>\"'`]++", re.I)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]++@[\w-]++(?:\.[\w-]++)+")
_UNITS = "年月日時分秒円万億兆元件個回人歳号番"
_CJK = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
                  r"\uff61-\uff65]")
_CUT = re.compile(r"[\s=]+")
_LEAD = "([{<\"'¿¡«“‘„"
_TRAIL = ".,;:!?)]}>\"'»”’…"
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.\-/~@+]*\w|[A-Za-z]:\\\S+|[\w.-]+(?:/[\w.-]+)+\.\w{1,8}")
_DIGIT = re.compile(r"\d")
# What every specific found by the last prose rule carries: a digit, or a path's
# separator. A chunk without either is skipped before it is split any further.
_MAYBE = re.compile(r"[\d/\\]")
_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|"
           "december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec|enero|febrero|marzo|"
           "abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre|noviembre|diciembre")
_DAY = r"\d{1,2}(?:st|nd|rd|th|º|°)?"
_NUMBER = r"\d+(?:[.,]\d+)*"
_UNIT_WORDS = (
    "usd|eur|gbp|jpy|mxn|ars|cop|clp|chf|cad|aud|euros?|dollars?|dólares|dolares|pesos?|"
    "pounds?|libras?|yen|kg|kgs|g|mg|km|m|cm|mm|mi|miles?|millas?|lbs?|kb|mb|gb|tb|ms|"
    "sec|secs|seconds?|segundos?|mins?|minutes?|minutos?|hrs?|hours?|horas?|days?|días?|"
    "dias?|weeks?|semanas?|months?|mes|meses|years?|años?|anos?|am|pm|a\\.m\\.|p\\.m\\.|h")
# A date, time or amount written with words or a unit: one specific, not its numbers.
_PHRASE = re.compile(
    # Only a word character or a currency sign can start one: every other position
    # is passed over at once, not tried against each alternative.
    rf"(?<![\w.,])(?=[\w$€£¥])(?:"
    rf"{_DAY}\.?\s+(?:de\s+|of\s+)?(?:{_MONTHS})\.?(?:,?\s+(?:de\s+|del\s+)?\d{{4}})?"
    rf"|(?:{_MONTHS})\.?\s+{_DAY}(?:,?\s+\d{{4}})?"
    rf"|(?:{_MONTHS})\.?\s+(?:de\s+|of\s+)?\d{{4}}"
    rf"|(?:[$€£¥]|us\$|r\$|usd|eur|gbp)\s?{_NUMBER}"
    rf"|{_NUMBER}(?::\d{{2}})?\s?(?:[€$£¥%]|(?:{_UNIT_WORDS})(?![\w]))"
    rf")(?![\w])", re.I)
_TAG = re.compile(r"</?[A-Za-z][\w:-]*+(?:\s[^<>\n]*+)?/?>")
# A code written as an acronym, a space and a number ("TP 1357", "LH 0441"), or an
# international phone number in groups ("+351 21 000 4242"): one specific, so it
# is the same specific as "TP1357" or "+351210004242" (white space is ignored).
_CODE = re.compile(r"(?<![\w.,/-])[A-Z]{2,5} \d{2,}+(?![\w])"
                   r"|(?<![\w+])\+\d{1,3}+(?: \d{1,4}+){2,5}+(?![\w])")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_SPACE = re.compile(r"\s+")


@functools.lru_cache(maxsize=4096)
def extract_specifics(text: str, *, whole: bool = False) -> frozenset[str]:
    """The normalized specifics of ``text`` (see the module docstring for what counts).

    ``whole``: read every line as prose, with no bulk rule; for Recap's own text (a
    summary), where every detail was kept on purpose and must stay kept. Pure, so
    recent answers are remembered: a fold reads each message more than once (what
    it requires, then unit by unit what it settles).
    """
    found: set[str] = set()
    text = unicodedata.normalize("NFKC", text)
    for piece in (text.split("\n") if whole else prose(text)):
        found |= _from_prose(piece)
    return frozenset(found)


class Segment(NamedTuple):
    """Lines ``start`` to ``stop`` (exclusive) of a text split into lines: one line of
    prose, or one bulk block (``fenced``: a fenced block from its opening fence up to
    its closing one, which ``closed`` says it has; else a run of bulk lines)."""

    start: int
    stop: int
    bulk: bool = False
    fenced: bool = False
    closed: bool = False

    def body(self) -> range:
        """The block's lines between its fences (all of an unfenced run)."""
        if not self.fenced:
            return range(self.start, self.stop)
        return range(self.start + 1, self.stop - 1 if self.closed else self.stop)


def segments(lines: Sequence[str]) -> Iterator[Segment]:
    """``lines`` (a text split at each newline) as prose lines and bulk blocks, in order,
    together covering every line once: the one reading of what is bulk (see the
    module docstring) that :func:`prose` and the excerpt sent to the summarizer
    (recap.core.prompts.bulk) share."""
    run = 0  # the bulk lines just before line i
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence:
            yield from _run(i, run)
            run = 0
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence.group(1)):
                j += 1
            closed = j < len(lines)
            yield Segment(i, j + 1 if closed else j, bulk=True, fenced=True, closed=closed)
            i = j + 1
            continue
        if _BULK_LINE.match(lines[i]):
            run += 1
        else:
            yield from _run(i, run)
            run = 0
            yield Segment(i, i + 1)
        i += 1
    yield from _run(len(lines), run)


def _run(stop: int, n: int) -> Iterator[Segment]:
    """The ``n`` bulk lines before line ``stop``: one block, or a single line of prose."""
    if n >= 2:
        yield Segment(stop - n, stop, bulk=True)
    elif n:
        yield Segment(stop - 1, stop)


def lead(lines: Sequence[str], segment: Segment) -> int | None:
    """The index of the line :func:`prose` reads of ``segment``: a prose line itself,
    a block's first non-empty line (None for a block with no such line)."""
    if not segment.bulk:
        return segment.start
    if not segment.fenced:
        return segment.start  # a run's lines are never blank
    return next((i for i in segment.body() if lines[i].strip()), None)


def prose(text: str) -> list[str]:
    """``text`` split into what the extractor reads: prose, and the first line of each
    bulk block (fenced code, pasted logs, stack traces, tables)."""
    lines = text.split("\n")
    return [lines[i] for i in (lead(lines, seg) for seg in segments(lines)) if i is not None]


def _from_prose(text: str) -> set[str]:
    found: set[str] = set()

    def take(pattern: re.Pattern[str], fold: bool, src: str) -> str:
        def one(m: re.Match[str]) -> str:
            value = m.group(1) if pattern.groups else m.group(0)
            value = _SPACE.sub(" ", value).strip()
            if pattern is not _CODE_SPAN:
                value = value.rstrip(_TRAIL)
            if fold:
                value = value.casefold()
            if value and len(value) <= MAX_SPECIFIC_CHARS:
                found.add(value)
            return " "
        return pattern.sub(one, src)

    text = take(_CODE_SPAN, False, text)
    text = take(_URL, True, text)
    text = take(_EMAIL, True, text)
    text = _TAG.sub(" ", text)
    text = take(_CODE, False, text)
    text = take(_PHRASE, False, text)
    for chunk in _CUT.split(text):
        if not _MAYBE.search(chunk):
            continue  # no piece of it can carry a digit or be a path
        for piece in _cjk_split(chunk):
            piece = _strip(piece)
            if (piece and len(piece) <= MAX_SPECIFIC_CHARS
                    and (_DIGIT.search(piece) or _PATH.fullmatch(piece))):
                found.add(piece)
    return found


def _cjk_split(chunk: str) -> list[str]:
    if not _CJK.search(chunk):
        return [chunk]
    pieces: list[str] = []
    current: list[str] = []
    for ch in chunk:
        if _CJK.match(ch) and ch not in _UNITS:
            pieces.append("".join(current))
            current = []
        else:
            current.append(ch)
    pieces.append("".join(current))
    # A unit character only belongs to a piece that carries a number.
    return [p for p in pieces if p and not all(c in _UNITS for c in p)]


def _strip(piece: str) -> str:
    while piece and (piece[0] in _LEAD or piece[-1] in _TRAIL):
        piece = piece.lstrip(_LEAD).rstrip(_TRAIL)
    return piece


@functools.lru_cache(maxsize=1024)
def canonical(text: str) -> str:
    """``text`` as :func:`contains` compares it: NFKC, casefolded, single spaces,
    no thousands commas."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return _THOUSANDS.sub("", _SPACE.sub(" ", text))


@functools.lru_cache(maxsize=16384)
def _pattern(specific: str) -> re.Pattern[str]:
    # White space is ignored: the specific's characters in order, a space allowed
    # between any two (canonical text has single spaces), so "TP1357" is found in
    # "TP 1357", "80 kg" in "80kg", "9:30am" in "9:30 am", and the other way round.
    key = canonical(specific).replace(" ", "")
    head = r"(?<![0-9a-z])" if key[:1].isascii() and key[:1].isalnum() else ""
    tail = r"(?![0-9a-z])" if key[-1:].isascii() and key[-1:].isalnum() else ""
    return re.compile(head + " ?".join(map(re.escape, key)) + tail)


def contains(text: str, specific: str) -> bool:
    """Whether ``specific`` is present in ``text`` (see the module docstring)."""
    return bool(_pattern(specific).search(canonical(text)))


def carries(text: str, specific: str) -> bool:
    """:func:`contains` without building a pattern for ``specific``: for a short
    ``text`` and a specific looked for once (a window cut around it)."""
    k = search_key(specific)
    return not k or k in Needles([k]).held_by([text])


def joined(names: Iterable[str], specifics: Iterable[str]) -> frozenset[str]:
    """The ``names`` that are not the letters of a code among ``specifics`` ("TP" of
    "TP 1357" or "TP1357"): keeping the code keeps them, however it is spaced.
    Each code is read once, whatever the number of names."""
    wanted = {n: canonical(n) for n in names}
    heads = set(wanted.values())
    letters: set[str] = set()  # the heads that some code continues with a digit
    for s in specifics:
        k = search_key(s)
        letters.update(k[:i] for i in range(1, len(k)) if k[i].isdigit() and k[:i] in heads)
    return frozenset(n for n, c in wanted.items() if c not in letters)


def absent(specifics: Iterable[str], texts: Iterable[str]) -> frozenset[str]:
    """The specifics present in none of ``texts`` (each text canonicalized once, and
    read once for all of them: :class:`Needles`)."""
    wanted = {s: search_key(s) for s in specifics}
    held = Needles(wanted.values()).held_by(texts)
    return frozenset(s for s, k in wanted.items() if k and k not in held)


def search_key(specific: str) -> str:
    """``specific`` as :class:`Needles` looks for it in what :func:`contains` reads
    (canonical, white space removed; "" is in every text)."""
    return canonical(specific).replace(" ", "")


def first_holding(specifics: Iterable[str], texts: Sequence[str]) -> dict[str, int]:
    """For each of ``specifics`` that one of ``texts`` holds (:func:`contains`), the
    index of the first that does; every text read once for all of them."""
    wanted = {s: search_key(s) for s in specifics}
    needles = Needles(wanted.values())
    first: dict[str, int] = {}
    for i, text in enumerate(texts):
        for k in needles.held_by([text]):
            first.setdefault(k, i)
    return {s: 0 if not k else first[k] for s, k in wanted.items()
            if (not k and texts) or k in first}


class Needles:
    """Many strings looked for in a text at once, each start of the text read once:
    at a position only the strings that start with its character are looked up, one
    slice per length they come in. So a search costs the text's length times the
    number of lengths (at most a specific's MAX_SPECIFIC_CHARS, and a handful in
    practice), whatever the number of strings: a line of a hundred thousand ids is
    read once, not once per id."""

    def __init__(self, needles: Iterable[str]) -> None:
        self.by_start: dict[str, dict[int, set[str]]] = {}
        for n in needles:
            if n:
                self.by_start.setdefault(n[0], {}).setdefault(len(n), set()).add(n)
        self.starts = re.compile(
            "[" + "".join(map(re.escape, self.by_start)) + "]" if self.by_start else "(?!)")

    def first(self, hay: str, *, fits: Callable[[int, int], bool] | None = None
              ) -> dict[str, int]:
        """Where each needle first starts in ``hay`` (those it holds), at a start and
        end ``fits`` accepts (default any)."""
        found: dict[str, int] = {}
        for m in self.starts.finditer(hay):
            at = m.start()
            for size, group in self.by_start[hay[at]].items():
                piece = hay[at:at + size]
                if piece in group and piece not in found and (
                        fits is None or fits(at, at + size)):
                    found[piece] = at
        return found

    def held_by(self, texts: Iterable[str]) -> frozenset[str]:
        """The needles (keys: :func:`canonical`, white space removed) that
        :func:`contains` finds in one of ``texts``."""
        canon = "\n".join(canonical(t) for t in texts)
        # White space is ignored (a key is matched with the spaces taken out), but a
        # letter or digit on either side must not be glued on through a space.
        spaced = {m.start() - k for k, m in enumerate(_ONE_SPACE.finditer(canon))}
        hay = canon.replace(" ", "")

        def fits(lo: int, hi: int) -> bool:
            return ((lo == 0 or lo in spaced or not _edge(hay[lo]) or not _edge(hay[lo - 1]))
                    and (hi == len(hay) or hi in spaced or not _edge(hay[hi - 1])
                         or not _edge(hay[hi])))
        return frozenset(self.first(hay, fits=fits))


_ONE_SPACE = re.compile(" ")


def _edge(ch: str) -> bool:
    """Whether ``ch`` is a letter or digit that :func:`contains` will not see run on."""
    return ch.isascii() and ch.isalnum() and not ch.isupper()
