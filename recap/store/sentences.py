"""One sentence, one memory, through the retention guard's keys.

The retention guard keeps a line as an entry, ``specific: sentence``
(recap.core.retention.entries), one per specific it was kept for; when it rebuilds the
lines of a previous summary, a sentence holding four specifics ("Hi, I'm Maya
Okafor, SRE at Larkspur Analytics") comes back as four facts that differ only
in their key (``Okafor: ...``, ``SRE: ...``). The sentence holds every key, so
one row of it carries them all: :func:`holding_memory` finds the live memory
that already states a sentence (the one a new fact then gains a source on, as
an exact duplicate does), and :func:`plain_fact` is the sentence a listing shows.
"""

from __future__ import annotations

from sqlalchemy import or_, select

from recap.core.specifics import MAX_SPECIFIC_CHARS, contains
from recap.db import Db
from recap.models import Memory

ENTRY_SEPARATOR = ": "  # between an entry's specific and its sentence


def plain_fact(fact: str) -> str:
    """``fact`` without a leading ``key: `` that the rest states again (a guard
    entry's specific: a name, a number, a path); any other fact as it is. A key
    the rest does not hold ("2024-03-14: the flight") is part of the fact and
    stays, so nothing a fact says is ever dropped."""
    key, sep, rest = fact.partition(ENTRY_SEPARATOR)
    key, rest = key.strip(), rest.strip()
    if sep and key and rest and len(key) <= MAX_SPECIFIC_CHARS and contains(rest, key):
        return rest
    return fact


def holding_memory(scope: str, fact: str, *, db: Db) -> int | None:
    """The oldest live memory of ``scope`` stating the sentence of ``fact`` (a guard
    entry) under any key or none, so it holds everything ``fact`` says; None for a
    fact that is not an entry, or a sentence not stored yet."""
    sentence = plain_fact(fact)
    if sentence == fact:
        return None
    return db.scalar(select(Memory.id).where(
        Memory.scope == scope, Memory.superseded_by.is_(None),
        or_(Memory.fact == sentence,
            Memory.fact.endswith(ENTRY_SEPARATOR + sentence, autoescape=True)))
        .order_by(Memory.id).limit(1))
