"""Normalised forms of what a turn names and what an archived line holds (pure), so
a reference in the user's own words meets the line that answers it.

A *key* is a comparable form of a word or a date:

- a date, however written ("2026-11-14", "14/11/2026", "Nov 14", "14 November",
  "the 14th"): ``d:14`` (the day) and, when the month is known, ``md:11-14``;
- a number with its unit or grouping ("1.2k", "1,200", "1200"): ``n:1200``;
- an identifier of letters and digits, whatever its separators or case
  ("E-4471", "e4471", "E_4471"): ``i:e4471``;
- a plain word, its simple English forms folded ("raised"/"raises"/"raise",
  "pinned"/"pin"): ``w:rais``, ``w:pin``;
- any other token (a path, a dotted name) lower-cased as written.

:func:`asked_keys` reads the keys of a question (each with the weight of its
shape, stop words left out); :func:`line_keys` those of a line, with the parts of
its compound tokens (``src/ledger/loader.py:212`` also holds ``w:loader`` and
``n:212``), so a question naming a part finds the whole. Every scan is one pass
of a regular expression whose repetitions cannot overlap (linear).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july",
                "august", "september", "october", "november", "december")
MONTHS = {**{m: i + 1 for i, m in enumerate(_MONTH_NAMES)},
          **{m[:3]: i + 1 for i, m in enumerate(_MONTH_NAMES)}, "sept": 9}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
_DATE = re.compile(
    r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"  # ISO
    r"|\b(?P<a>\d{1,2})[/.](?P<b>\d{1,2})(?:[/.](?:\d{4}|\d{2}))?\b"  # 14/11, 11/14/26
    rf"|\b(?P<mon>{_MONTH})\.?\s{{1,3}}(?P<md>\d{{1,2}}){_ORD}\b"  # Nov 14, November 14th
    rf"|\b(?P<dm>\d{{1,2}}){_ORD}\s{{1,3}}(?:of\s{{1,3}})?(?P<mon2>{_MONTH})\b"  # 14 Nov
    r"|\b(?P<day>\d{1,2})(?:st|nd|rd|th)\b",  # the 14th
    re.IGNORECASE)
# A number as written: digits grouped by commas, a decimal part, a unit of scale.
_NUMBER = re.compile(r"(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?([kKmMbB]|bn|mn)?")
_SCALE = {"k": 1_000, "m": 1_000_000, "mn": 1_000_000, "b": 1_000_000_000,
          "bn": 1_000_000_000}
_TOKEN = re.compile(r"[\w\-./:#@]+")
_EDGE = "-./:#@_"
_PART = re.compile(r"[^\W_]+")
_SEPARATORS = re.compile(r"[\-_]")
# Digits grouped by commas ("1,200.50"): the token pattern cuts them at the comma.
_GROUPED = re.compile(r"(?<![\d,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?:[kKmMbB]|bn|mn)?")
_VOWELS = frozenset("aeiou")
_LETTERS_DIGITS = re.compile(r"([a-z]+)(\d+)")


def stem(word: str) -> str:
    """``word`` (lower-cased letters) with a simple English ending folded: "raised",
    "raises" and "raise" give "rais"; "pinned", "pins" and "pin" give "pin"."""
    for ending in ("ing", "ed", "es", "s", "e"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            if ending == "s" and word.endswith("ss"):
                break
            word = word[:-len(ending)]
            break
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in _VOWELS | {"l", "s"}:
        word = word[:-1]
    return word


def number_key(token: str) -> str | None:
    """``n:<value>`` of a token that is one number as written ("1,200", "1.2k",
    "$1200", "12%"), else None."""
    m = _NUMBER.fullmatch(token.strip("$€£%"))
    if m is None:
        return None
    whole, frac, unit = m.group(1).replace(",", ""), m.group(2) or "", m.group(3)
    if unit is not None:
        return f"n:{round(float(whole + frac) * _SCALE[unit.lower()])}"
    if frac.rstrip("0") in ("", "."):
        return f"n:{int(whole)}"
    return f"n:{int(whole)}{frac.rstrip('0')}"


def _grouped(written: str) -> str:
    key = number_key(written)
    return key[2:] if key else written


def token_key(token: str) -> str:
    """The key of one token as written (edge punctuation stripped): its number,
    identifier, word or lower-cased form."""
    low = token.lower()
    number = number_key(token)
    if number is not None:
        return number
    letters = any(c.isalpha() for c in low)
    digits = any(c.isdigit() for c in low)
    if letters and digits and _PART.fullmatch(_SEPARATORS.sub("", low)):  # no path
        return "i:" + _SEPARATORS.sub("", low)
    if low.isalpha():
        return "w:" + stem(low)
    return low


def date_keys(text: str) -> list[tuple[str, int, int]]:
    """(key, start, end) of each date ``text`` writes: ``d:DD`` always and ``md:MM-DD``
    when the month is known (both readings of 05/06)."""
    out: list[tuple[str, int, int]] = []
    for m in _DATE.finditer(text):
        at, end = m.start(), m.end()
        pairs: list[tuple[int | None, int]]
        if m.group("y"):
            pairs = [(int(m.group("m")), int(m.group("d")))]
        elif m.group("a"):
            a, b = int(m.group("a")), int(m.group("b"))
            pairs = [(b, a), (a, b)] if a <= 12 and b <= 12 else [(b, a)] if a > 12 else [(a, b)]
        elif m.group("mon"):
            pairs = [(MONTHS[m.group("mon").lower()], int(m.group("md")))]
        elif m.group("mon2"):
            pairs = [(MONTHS[m.group("mon2").lower()], int(m.group("dm")))]
        else:
            pairs = [(None, int(m.group("day")))]
        for month, day in pairs:
            if not 1 <= day <= 31 or (month is not None and not 1 <= month <= 12):
                continue
            out.append((f"d:{day}", at, end))
            if month is not None:
                out.append((f"md:{month}-{day}", at, end))
    return out


def tokens(text: str) -> list[str]:
    """The word-like runs of ``text`` (letters, digits and ``-./:#@_`` inside a
    word), edge punctuation stripped, as written."""
    return [t for t in (raw.strip(_EDGE) for raw in _TOKEN.findall(text)) if t]


def line_keys(line: str) -> set[str]:
    """Every key ``line`` holds: its tokens', their parts' and its dates'."""
    keys = {k for k, _, _ in date_keys(line)}
    keys.update(f"n:{_grouped(m.group())}" for m in _GROUPED.finditer(line))
    for token in tokens(line):
        keys.add(token_key(token))
        if not token.isalnum():
            keys.update(token_key(p) for p in _PART.findall(token))
    return keys


def asked_keys(asked: str, *, weight: Callable[[str], float],
               skip: Iterable[str]) -> dict[str, float]:
    """The keys of a question, each with the weight of the most specific token or
    date that gives it (``weight`` of the token as written; a date weighs as a
    number); words in ``skip`` (stop words, lower-cased) and one-letter tokens
    left out. A date's day and month words are not keys of their own."""
    stop = set(skip)
    out, covered = _dates_and_numbers(asked, weight=weight)
    i = 0  # dates and tokens both come in order: one pointer walks the dates
    for m in _TOKEN.finditer(asked):
        while i < len(covered) and covered[i][1] <= m.start():
            i += 1
        token = m.group().strip(_EDGE)
        if (not token or len(token) < 2 or token.lower() in stop
                or (i < len(covered) and covered[i][0] <= m.start())):
            continue
        key = token_key(token)
        out[key] = max(out.get(key, 0.0), weight(token))
    return out


def _dates_and_numbers(asked: str, *, weight: Callable[[str], float]
                       ) -> tuple[dict[str, float], list[tuple[int, int]]]:
    """(the keys of the dates and grouped numbers ``asked`` writes, the stretches
    they cover in order, not overlapping)."""
    out: dict[str, float] = {}
    spans: list[tuple[int, int]] = []
    for key, start, end in date_keys(asked):
        out[key] = max(out.get(key, 0.0), weight("2026-11-14"))
        spans.append((start, end))
    for m in _GROUPED.finditer(asked):
        out[f"n:{_grouped(m.group())}"] = weight(m.group())
        spans.append((m.start(), m.end()))
    covered: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if not covered or covered[-1][1] <= start:
            covered.append((start, end))
    return out, covered


def spellings(term: str) -> tuple[str, str]:
    """(another spelling of ``term`` to look up, the stem its word forms begin with)
    for a cue (lower-cased, as :func:`tokens` reads it); "" where it has none. An
    identifier of letters and digits is also looked up without its separators
    ("e-4471": "e4471") or, written without, with a hyphen where letters meet
    digits ("e4471": "e-4471"); a plain word by its stem ("raised": "rais")."""
    if term.isalpha():
        root = stem(term)
        return "", root if root != term and len(root) >= 3 else ""
    key = token_key(term)
    if not key.startswith("i:"):
        return "", ""
    bare = key[2:]
    if bare != term:
        return bare, ""
    split = _LETTERS_DIGITS.fullmatch(term)
    return (f"{split.group(1)}-{split.group(2)}" if split else ""), ""
