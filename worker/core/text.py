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


# Invisible format characters (zero-width space and joiners, bidi marks, BOM,
# soft hyphen, tag characters...): a model reads "<\u200b/TAG>" as "</TAG>".
_INVISIBLE = "".join(ch for ch in map(chr, [*range(0x10000), *range(0xE0000, 0xE0080)])
                     if unicodedata.category(ch) == "Cf")
_GAP = "[\\s" + re.escape(_INVISIBLE) + "]*"
# "<" and its look-alikes (full-width, small form variant).
_LT = "[<\uff1c\ufe64]"


def tag_opener(names: Iterable[str]) -> re.Pattern[str]:
    """A pattern for anything that could open or close one of the tags ``names``, in
    any case and with whitespace or invisible characters anywhere inside."""
    spelled = "|".join(_GAP.join(map(re.escape, name)) for name in names)
    return re.compile(f"{_LT}({_GAP}/?{_GAP})({spelled})", re.IGNORECASE)


def defuse(pattern: re.Pattern[str], text: str) -> str:
    """``text`` with the ``<`` of every match of a :func:`tag_opener` pattern escaped."""
    return pattern.sub(lambda m: "&lt;" + m.group(1) + m.group(2), text)
