"""Text checks and clean-ups shared by input validation and model output (pure)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

REDACTED = "[redacted]"
# Code points PostgreSQL text cannot hold (NUL) or UTF-8 cannot encode (lone surrogates).
_NUL = "\x00"
_SURROGATE = re.compile("[\ud800-\udfff]")


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` (an API key) replaced."""
    return text.replace(secret, REDACTED) if secret and text else text


def check_text(value: str, what: str) -> str | None:
    """Why ``value`` cannot be stored as text (NUL, lone surrogate), or None if it can."""
    if "\x00" in value:
        return f"{what} contains a NUL byte, which is not valid text"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"{what} is not valid text: {exc.reason} at position {exc.start} "
                "(a lone surrogate?)")
    return None


def sanitize(text: str) -> str:
    """Model output made storable: NUL removed, lone surrogates replaced by U+FFFD.

    Nothing a model returns is trusted; a JSON answer's ``"\u0000"`` becomes a real
    NUL once parsed, and PostgreSQL refuses the whole transaction over it.
    """
    if _NUL in text:
        text = text.replace(_NUL, "")
    return _SURROGATE.sub("\ufffd", text)


# Unicode's Default_Ignorable_Code_Point, as DerivedCoreProperties.txt lists it
# (first, last): characters a renderer draws as nothing, whatever their category
# (the combining grapheme joiner, variation selectors, Hangul fillers, musical
# beams, shorthand format controls, tags). Python's unicodedata has no such
# property, so the ranges are written out; reserved code points in them count too.
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
# What a model reads as nothing: every default-ignorable code point and every
# format character (category Cf: bidi marks, the Arabic number signs...); a model
# reads "<\u034f/TAG>" as "</TAG>". Format characters lie below U+20000 or among
# the tags (E0000-E0FFF, ignorable already).
INVISIBLE = frozenset(
    [*(c for lo, hi in DEFAULT_IGNORABLE for c in range(lo, hi + 1)),
     *(c for c in range(0x20000) if unicodedata.category(chr(c)) == "Cf")])
# For str.translate: every invisible character removed.
DROP_INVISIBLE: dict[int, None] = dict.fromkeys(INVISIBLE)


def _ranges(points: frozenset[int]) -> str:
    """A regex character class body for ``points``, as ranges."""
    out: list[str] = []
    ordered = sorted(points)
    start = prev = ordered[0]
    for c in [*ordered[1:], -1]:
        if c == prev + 1:
            prev = c
            continue
        out.append(re.escape(chr(start)) + ("" if prev == start else "-" + re.escape(chr(prev))))
        start = prev = c
    return "".join(out)


# Possessive: a gap never gives back what it took (what follows it is never white
# space), so a "<" before a megabyte of spaces is read once, not once per split.
_GAP = "[\\s" + _ranges(INVISIBLE) + "]*+"

# Every tag Recap emits or parses in text that reaches a model: the reply's blocks
# (recap.core.context.assemble), the summarizer's delimiters (recap.core.prompts.summarize), the
# repair call's and the mining call's. Content is defused against all of them.
RECAP_TAGS = ("SUMMARY_OF_PRIOR_CONTEXT", "MEMORIES", "ARCHIVE_RECALL", "message",
              "conversation", "previous_summary", "summary", "known_facts")

# Look-alikes a model reads as the ASCII letter (or ``<``, ``/``, ``_``) that NFKC
# leaves alone: Cyrillic and Greek letters, arrowheads, slashes. Full-width and
# small-form variants need no entry: NFKC maps them to ASCII first.
_LOOKALIKES = {
    "a": "\u0430\u0410\u03b1\u0391", "b": "\u0412\u03b2\u0392\u044c",
    "c": "\u0441\u0421\u03f2\u03f9", "d": "\u0501", "e": "\u0435\u0415\u03b5\u0395",
    "f": "\u0492\u03dc", "g": "\u0261\u050c",
    "h": "\u04bb\u041d\u0397", "i": "\u0456\u0406\u03b9\u0399\u04c0\u0131", "j": "\u0458\u0408",
    "k": "\u043a\u041a\u03ba\u039a", "l": "\u04cf\u217c", "m": "\u043c\u041c\u039c",
    "n": "\u043f\u039d\u03b7", "o": "\u043e\u041e\u03bf\u039f\u03c3\u0585",
    "p": "\u0440\u0420\u03c1\u03a1", "q": "\u051b", "r": "\u0433\u0491", "s": "\u0455\u0405",
    "t": "\u0442\u0422\u03c4\u03a4", "u": "\u03c5\u057d\u028b", "v": "\u03bd\u0475\u0474",
    "w": "\u051d\u0461", "x": "\u0445\u0425\u03c7\u03a7", "y": "\u0443\u0423\u03b3\u04af\u03a5",
    "z": "\u0396", "<": "\u2039\u2329\u3008\u02c2\u1438\u276e\u27e8\u227a",
    "/": "\u2215\u2044\u29f8\u2571\u30ce", "_": "\u2017\u02cd\u2e0f",
}
CONFUSABLES = str.maketrans({ch: ascii_ for ascii_, chars in _LOOKALIKES.items()
                             for ch in chars})

# Every character that reads as "<" once normalized: ASCII, NFKC's and the map's
# (checked by the tests against a scan of the code points).
OPENERS = "<\u02c2\u1438\u2039\u227a\u2329\u276e\u27e8\u3008\ufe3f\ufe64\uff1c"
_OPENERS = re.compile(f"[{OPENERS}]")


def skeleton(text: str) -> tuple[str, list[int]]:
    """``text`` as a model may read it (NFKC, then :data:`CONFUSABLES`, without
    :data:`INVISIBLE` characters), and for each
    character of the result the index of the character of ``text`` it came from."""
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if ch.isascii():
            out.append(ch)
            where.append(i)
            continue
        # Mapped before NFKC too: NFKC turns a few look-alikes (lunate sigma, the
        # double low line) into characters that look less alike.
        # Invisible characters are read as nothing, before NFKC and after it (NFKC
        # maps the Hangul filler U+3164 to U+1160, also a filler).
        mapped = unicodedata.normalize(
            "NFKC", ch.translate(CONFUSABLES).translate(DROP_INVISIBLE)
        ).translate(CONFUSABLES).translate(DROP_INVISIBLE)
        out.append(mapped)
        where.extend([i] * len(mapped))
    return "".join(out), where


def tag_opener(names: Iterable[str]) -> re.Pattern[str]:
    """A pattern for anything that could open or close one of the tags ``names``, in
    any case and with whitespace or invisible characters anywhere inside; it is
    matched against a :func:`skeleton`, so look-alike letters count too."""
    spelled = "|".join(_GAP.join(map(re.escape, name.lower())) for name in names)
    return re.compile(f"<({_GAP}/?{_GAP})({spelled})(?![A-Za-z0-9_])", re.IGNORECASE)


def defuse(pattern: re.Pattern[str], text: str) -> str:
    """``text`` with the ``<`` (or look-alike) of every match of a :func:`tag_opener`
    pattern replaced by ``&lt;``; everything else is kept as written."""
    if not _OPENERS.search(text):
        return text  # nothing that reads as "<": the common case, kept cheap
    if text.isascii():
        starts = sorted({m.start() for m in pattern.finditer(text)})
    else:
        seen, where = skeleton(text)
        starts = sorted({where[m.start()] for m in pattern.finditer(seen)})
    if not starts:
        return text
    out: list[str] = []
    last = 0
    for at in starts:
        out.append(text[last:at])
        out.append("&lt;")
        last = at + 1
    out.append(text[last:])
    return "".join(out)


_ALL_TAGS = tag_opener(RECAP_TAGS)


def defuse_all(text: str) -> str:
    """``text`` with every tag of :data:`RECAP_TAGS` defused (any case, spacing,
    width or look-alike spelling): data can neither close nor fake a block."""
    return defuse(_ALL_TAGS, text)


def lower_by_index(text: str) -> str:
    """``text`` lower-cased index for index, so a position found in it is the same
    position in ``text`` (``str.lower`` may lengthen a character: "İ" becomes two)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
