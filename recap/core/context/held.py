"""Which words of a turn a context already holds (pure): what recall does not
look up (recap.core.context.lookback.cues). Linear in the turn plus the context."""

from __future__ import annotations

import re
from collections.abc import Iterable

# A term is held by the context when it is one of its words, a part of one, or a
# run of at most this many parts of one (``app.py`` in ``src/app.py``).
MAX_RUN = 6
_PART = re.compile(r"[^\-./:#@_]+")
# A word as recap.core.context.lookback.tokens reads it, edge punctuation left out: it
# starts and ends with a letter or a digit.
_WORD_RUN = re.compile(r"[^\W_](?:[\w\-./:#@]*[^\W_])?")


def held(terms: Iterable[str], context: str) -> set[str]:
    """The ``terms`` (lower-cased words, as recap.core.context.lookback.cues reads them) that
    ``context`` holds: as one of its words, as a part of one (cut at
    ``-./:#@_``), or as a run of consecutive parts of one (at most :data:`MAX_RUN`).
    Linear: the context's words are read once (in C); parts and runs come from
    the distinct words that have separators, runs only for a term of several
    parts not found so far, built from the parts such terms have."""
    wanted = set(terms)
    words = set(_WORD_RUN.findall(context.lower()))
    present = wanted & words
    rest = wanted - present
    if not rest:
        return present
    joined = [w for w in words if not w.isalnum()]  # the words with separators
    present |= rest & {p for w in joined for p in _PART.findall(w)}
    several = {t for t in rest - present if _PART.fullmatch(t) is None}
    if several:
        parts = {p for t in several for p in _PART.findall(t)}
        for word in joined:
            present |= _runs(word, parts) & several
    return present


def _runs(word: str, parts: set[str]) -> set[str]:
    """The runs of at most :data:`MAX_RUN` consecutive parts of ``word`` made only of
    ``parts``, with the separators between them as written."""
    spans = [(m.start(), m.end()) for m in _PART.finditer(word)]
    out: set[str] = set()
    for i, (start, _) in enumerate(spans):
        for j in range(i, min(i + MAX_RUN, len(spans))):
            if word[spans[j][0]:spans[j][1]] not in parts:
                break
            out.add(word[start:spans[j][1]])
    return out
