"""Which memories go into a context (pure): ranked by relevance to a query, then
importance, then recency, within a token budget. The query is the session's
summary (:func:`topic_terms`: the block is chosen once per summary version, so it
can sit in the prompt cache) or, with RECAP_MEMORIES_PER=reply, the newest user
turn (:func:`query_terms`).

The database ranks on PostgreSQL (``ts_rank`` over ``to_tsvector('simple', fact)``
with an OR of :func:`query_terms`); on SQLite the edge scores candidates with
:func:`overlap`. Either way the choice below is the same.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

# Words of the newest user turn used as the query. Letters and digits only, so a
# term is always a valid to_tsquery operand; capped, so a pasted log cannot turn
# the ranking query into thousands of terms.
_WORD = re.compile(r"[^\W_]+")
MAX_QUERY_TERMS = 32


@dataclass(frozen=True)
class Candidate:
    """A live memory with what ranks it: ``rank`` is its relevance to the query
    (0: none), ``id`` grows with time (the recency tie-break)."""

    id: int
    fact: str
    importance: int
    rank: float = 0.0
    # Who stated it (recap.models.SOURCE_KINDS, the strongest of its sources: the
    # user's own words first): the memories block groups its lines by it.
    source: str = "user"


def _words(text: str) -> list[str]:
    # NFC: an accent typed as a combining mark must not split its word.
    return _WORD.findall(unicodedata.normalize("NFC", text).lower())


def query_terms(text: str) -> list[str]:
    """The distinct lower-cased words (2+ characters) of ``text``, first ones first.

    Words are runs of letters and digits: scripts written without spaces
    (Japanese, Chinese) give long runs that rarely match a fact's, so there
    relevance mostly falls back to importance and recency.
    """
    terms: dict[str, None] = {}
    for word in _words(text):
        if len(word) > 1:
            terms.setdefault(word, None)
            if len(terms) == MAX_QUERY_TERMS:
                break
    return list(terms)


def topic_terms(text: str) -> list[str]:
    """The words that say what ``text`` (a summary) is about: its most frequent
    distinct words of 4+ characters, or carrying a digit, first ones first among
    equals, at most :data:`MAX_QUERY_TERMS`. The query of a memories block chosen
    once per summary version; short words are mostly grammar in any language."""
    seen: dict[str, int] = {}
    for word in _words(text):
        if len(word) > 3 or any(c.isdigit() for c in word):
            seen[word] = seen.get(word, 0) + 1
    order = {w: i for i, w in enumerate(seen)}
    return sorted(seen, key=lambda w: (-seen[w], order[w]))[:MAX_QUERY_TERMS]


def overlap(terms: Iterable[str], fact: str) -> float:
    """How many of ``terms`` occur as words of ``fact`` (SQLite's stand-in for ts_rank)."""
    words = set(_words(fact))
    return float(sum(1 for t in terms if t in words))


def rank_key(c: Candidate) -> tuple[float, int, int]:
    """Sort key: most relevant, then most important, then newest first."""
    return (-c.rank, -c.importance, -c.id)


def choose(candidates: Sequence[Candidate], *, budget: int,
           count: Callable[[str], int]) -> tuple[list[str], int]:
    """(the lines to show, their tokens): the best-ranked facts whose lines fit
    ``budget`` tokens together (:func:`fit`)."""
    return fit((f"- {c.fact}" for c in sorted(candidates, key=rank_key)), budget=budget,
               count=count)


def choose_candidates(candidates: Sequence[Candidate], *, budget: int,
                      count: Callable[[str], int]) -> tuple[list[Candidate], int]:
    """:func:`choose` returning the candidates shown (best first) with their lines'
    tokens, for a caller that lays the lines out itself."""
    kept: list[Candidate] = []
    used = 0
    for c in sorted(candidates, key=rank_key):
        cost = count(f"- {c.fact}") + (count("\n") if kept else 0)
        if used + cost <= budget:
            kept.append(c)
            used += cost
    return kept, used


def fit(lines: Iterable[str], *, budget: int,
        count: Callable[[str], int]) -> tuple[list[str], int]:
    """(the first ``lines`` that fit ``budget`` tokens joined by newlines, their
    tokens); a line too long for what is left is skipped so a shorter one further
    down may still fit."""
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = count(line) + (count("\n") if kept else 0)
        if used + cost <= budget:
            kept.append(line)
            used += cost
    return kept, used
