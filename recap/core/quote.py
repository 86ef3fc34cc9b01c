"""The lines recall quotes from an archived message (:mod:`recap.core.lookback`):
the line that names a cue, the line after it when that one is short, and the
later lines of the same excerpt that name the cue again; long lines cut at
whitespace around the cue. Pure, and linear in the (bounded) excerpt."""

from __future__ import annotations

from recap.core.text import lower_by_index

# A quoted line longer than this is cut around the cue, at whitespace.
MAX_LINE_CHARS = 400
# A line this short (or ending with ':') is quoted with the line after it: the
# path, hash or name stated next to a specific is often on the next line.
SHORT_LINE = 80
# Later lines of the same excerpt that name the cue again, quoted after the first.
MORE_LINES = 2


def _word_find(text: str, term: str) -> int:
    """The first index of ``term`` in lower-cased ``text`` as a whole word, else -1
    (linear: str.find per occurrence, each one once)."""
    start = text.find(term)
    while start >= 0:
        before = text[start - 1] if start else " "
        end = start + len(term)
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or after.isalnum()):
            return start
        start = text.find(term, start + 1)
    return -1


def _boundary_find(text: str, term: str) -> int:
    """The first index of ``term`` in lower-cased ``text`` as a whole word, else as
    a substring, else -1."""
    at = _word_find(text, term)
    return at if at >= 0 else text.find(term)


def snippet(excerpt: str, term: str) -> str | None:
    """The line of ``excerpt`` that holds ``term``, with the line after it when the
    line is short or ends with ':', cut at whitespace around the term when longer
    than :data:`MAX_LINE_CHARS`, then up to :data:`MORE_LINES` later lines of the
    excerpt that name ``term`` as a whole word (a log states the code it raised and
    then what went with it); None if the term is not there."""
    found = snippet_spans(excerpt, term)
    return None if found is None else found[0]


def snippet_spans(excerpt: str, term: str) -> tuple[str, list[tuple[int, int]]] | None:
    """:func:`snippet`, with the (start, end) in ``excerpt`` of each stretch it quotes
    (the first line with its neighbour, then each later line): what the label of a
    recalled line is read from."""
    at = _boundary_find(lower_by_index(excerpt), term)
    if at < 0:
        return None
    start = excerpt.rfind("\n", 0, at) + 1
    end = excerpt.find("\n", at)
    end = len(excerpt) if end < 0 else end
    line = excerpt[start:end].strip()
    if (len(line) < SHORT_LINE or line.endswith(":")) and end < len(excerpt):
        nxt = excerpt.find("\n", end + 1)
        following = excerpt[end + 1:len(excerpt) if nxt < 0 else nxt].strip()
        if following:
            line = f"{line}\n{following}"
            end = len(excerpt) if nxt < 0 else nxt
    more = _naming(excerpt, end, term)
    text = "\n".join([_cut(line, term), *(_cut(excerpt[lo:hi].strip(), term) for lo, hi in more)])
    return text, [(start, end), *more]


def _naming(text: str, start: int, term: str) -> list[tuple[int, int]]:
    """The (start, end) of up to :data:`MORE_LINES` lines of ``text`` from ``start``
    naming ``term`` as a whole word (one pass over the bounded excerpt)."""
    found: list[tuple[int, int]] = []
    lo = start
    while lo <= len(text) and len(found) < MORE_LINES:
        hi = text.find("\n", lo)
        hi = len(text) if hi < 0 else hi
        if _word_find(lower_by_index(text[lo:hi]), term) >= 0:
            found.append((lo, hi))
        lo = hi + 1
    return found


def _cut(line: str, term: str) -> str:
    """``line`` as is, or cut at whitespace around ``term`` when longer than
    :data:`MAX_LINE_CHARS`."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    at = _boundary_find(lower_by_index(line), term)
    half = (MAX_LINE_CHARS - len(term)) // 2
    lo, hi = max(0, at - half), min(len(line), at + len(term) + half)
    while lo > 0 and not line[lo - 1].isspace() and at - lo < half + 60:
        lo -= 1  # widen to whitespace: never cut a path or hash in two
    while hi < len(line) and not line[hi].isspace() and hi - at < half + 60 + len(term):
        hi += 1
    return ("…" if lo > 0 else "") + line[lo:hi].strip() + ("…" if hi < len(line) else "")
