"""What PostgreSQL's recall index reads of an archived message too long to index
whole (``archived_messages.search_terms``).

A tsvector holds at most 1 MB of lexemes and positions, and ``to_tsvector`` refuses
a text whose words need more: an index over a message that long would refuse its
row, and the job archiving it would fail every time. So a message of up to
:data:`MAX_INDEXED_CHARS` characters is indexed as it is, and a longer one by
:func:`search_terms`: its distinct words, in the order they first appear, up to
what a tsvector holds with room to spare. The message itself stays stored whole
(``content``, ``search_text``); recall reads its excerpts from there.
"""

from __future__ import annotations

import re

# A message this long or shorter is indexed as it is: however its characters are
# chosen (one-letter hyphenated parts, URLs, four-byte characters), its tsvector
# stays far below the 1 MB limit.
MAX_INDEXED_CHARS = 32_768

# What the derived text's words may cost, in bytes of the tsvector they make
# (see :func:`cost`); the limit is 1,048,575, the rest is margin.
TERMS_BUDGET = 900_000

# PostgreSQL skips a word this long or longer ("word is too long to be indexed").
MAX_WORD_BYTES = 2048

# A run of characters without white space longer than this (minified JSON, a long
# path, base64) is read as its letters and digits, as the parser splits it.
MAX_CHUNK_CHARS = 64

# Marks around a word that the parser reads as separators: "(foo)," is "foo".
_EDGES = "\"'`()[]{}<>,.;:!?*"
_ALNUM = re.compile(r"[^\W_]+")


def needs_terms(text: str) -> bool:
    """Whether ``text`` is too long to index whole (:data:`MAX_INDEXED_CHARS`)."""
    return len(text) > MAX_INDEXED_CHARS


def cost(word: str) -> int:
    """An upper bound on the bytes ``word`` adds to a tsvector. Exact for a word of
    ASCII letters and digits: one lexeme, its bytes, one of alignment, a position
    count and one position. Four bytes a byte for any other word of letters and
    digits: lower case can be half as long again, and the parser may split it
    where the database's locale and Unicode disagree on a letter (every other
    character at worst). Eight bytes a byte for a word with marks in it: a
    hyphenated word is also each of its parts, a URL its host and path."""
    size = len(word.encode())
    if word.isalnum():
        return size + 5 if word.isascii() else 4 * size + 5
    return 8 * size + 8


def _words(text: str) -> list[str]:
    """The words of ``text``: runs without white space, stripped of the marks
    around them; a long run as its letters and digits."""
    out: list[str] = []
    for chunk in text.split():
        if len(chunk) > MAX_CHUNK_CHARS:
            out.extend(_ALNUM.findall(chunk))
            continue
        word = chunk.strip(_EDGES)
        if word:
            out.append(word)
    return out


def search_terms(text: str, *, budget: int = TERMS_BUDGET) -> str:
    """The distinct words of ``text`` (case ignored), in the order they first appear,
    one space apart, while their :func:`cost` fits ``budget``; a word PostgreSQL
    would not index anyway, or one past the budget, is left out. Linear in the
    length of ``text``."""
    seen: set[str] = set()
    kept: list[str] = []
    spent = 0
    for word in _words(text):
        key = word.lower()
        if key in seen or len(word.encode()) >= MAX_WORD_BYTES:
            continue
        seen.add(key)
        price = cost(word)
        if spent + price > budget:
            continue  # a shorter word after it may still fit
        spent += price
        kept.append(word)
    return " ".join(kept)
