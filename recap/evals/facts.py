"""Planted facts: a long conversation with N facts whose survival ``recap eval`` measures (pure).

Each planted fact is one sentence added to a user turn of a filler conversation
(the demo's SRE chat, or the user's own JSONL), with the specific that must
survive and a question whose answer is that specific. Kinds rotate through
names, numbers, dates and preferences, so both what the retention guard protects
(tokens with digits) and what only a summarizer or memory keeps (names, tastes)
are measured.

The conversation file format (``recap eval --conversation FILE``) is JSON lines
``{"role": "user"|"assistant", "content": "..."}``; its expectations
(``--expect FILE``) are JSON lines ``{"expected": "...", "question": "..."}``
(``question`` optional: without it the fact counts for retention only).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from recap.core.validate import json_object
from recap.errors import InvalidInput

Message = tuple[str, str]

_FIRST = ("Ingrid", "Tomasz", "Aiko", "Rafael", "Nkechi", "Soren", "Mirela", "Kwame",
          "Lucia", "Dmitri", "Yusuf", "Hana", "Oskar", "Priya", "Mateo", "Elif")
_LAST = ("Solberg", "Wierzbicki", "Tanabe", "Quintero", "Adeyemi", "Lindqvist", "Popescu",
         "Mensah", "Ferrante", "Volkov", "Demir", "Kowalczyk", "Brandt", "Raman", "Ibarra")
_ROLES = ("manager", "dentist", "landlord", "mentor", "accountant", "climbing partner",
          "sister-in-law", "tax advisor")
_THINGS = ("employee badge", "insurance policy", "library card", "parking permit",
           "locker", "gym membership", "bike frame", "passport")
_EVENTS = ("daughter's piano recital", "visa appointment", "dentist check-up",
           "apartment viewing", "half marathon", "performance review", "flight to Lisbon",
           "car inspection")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_TASTES = (("editor theme", "Solarized Dark"), ("coffee order", "flat white with oat milk"),
           ("tea", "genmaicha"), ("keyboard layout", "Colemak-DH"),
           ("programming font", "Iosevka Term"), ("holiday spot", "the Faroe Islands"),
           ("board game", "Terraforming Mars"), ("pizza topping", "fig and gorgonzola"))


@dataclass(frozen=True)
class Planted:
    """One fact: the sentence planted, the specific that must survive, its question."""

    kind: str  # name | number | date | preference | given
    sentence: str
    expected: str
    question: str | None = None


def plant(n: int, *, seed: int = 7) -> list[Planted]:
    """``n`` distinct facts, deterministic for ``seed``."""
    rng = random.Random(seed)
    facts: list[Planted] = []
    for i in range(n):
        kind = ("name", "number", "date", "preference")[i % 4]
        k = i // 4
        if kind == "name":
            who = _ROLES[k % len(_ROLES)]
            name = f"{_FIRST[(k * 5 + rng.randrange(3)) % len(_FIRST)]} {_LAST[k % len(_LAST)]}"
            facts.append(Planted(kind, f"By the way, my {who} is called {name}.", name,
                                 f"What is the name of my {who}?"))
        elif kind == "number":
            thing = _THINGS[k % len(_THINGS)]
            number = f"{rng.randrange(10_000, 99_999)}-{'ABCDEFGHJK'[rng.randrange(10)]}"
            facts.append(Planted(kind, f"Note for later: my {thing} number is {number}.",
                                 number, f"What is my {thing} number?"))
        elif kind == "date":
            event = _EVENTS[k % len(_EVENTS)]
            day = f"{rng.randrange(1, 29)} {_MONTHS[rng.randrange(12)]} {2026 + k % 3}"
            facts.append(Planted(kind, f"Please remember: my {event} is on {day}.", day,
                                 f"When is my {event}?"))
        else:
            topic, taste = _TASTES[k % len(_TASTES)]
            facts.append(Planted(kind, f"Unrelated, but my favourite {topic} is {taste}.",
                                 taste, f"What is my favourite {topic}?"))
    return facts


def weave(filler: Sequence[Message], facts: Sequence[Planted]) -> list[Message]:
    """``filler`` with each fact's sentence appended to a user turn, spread evenly over
    the first 90% of the conversation (the end stays verbatim in any context, which
    would measure nothing). Raises InvalidInput when there are too few user turns."""
    users = [i for i, (role, _) in enumerate(filler) if role == "user"]
    usable = users[: max(1, int(len(users) * 0.9))]
    if len(usable) < len(facts):
        raise InvalidInput(f"{len(facts)} facts need at least {len(facts)} user turns in the "
                           f"first 90% of the conversation; it has {len(usable)}")
    out = list(filler)
    for j, fact in enumerate(facts):
        at = usable[(j * len(usable)) // max(1, len(facts))]
        role, content = out[at]
        out[at] = (role, f"{content}\n\n{fact.sentence}")
    return out


def present(fact: Planted, text: str) -> bool:
    """Whether ``fact``'s specific is in ``text`` (case- and spacing-insensitive)."""
    return " ".join(fact.expected.split()).casefold() in " ".join(text.split()).casefold()


def retained(facts: Sequence[Planted], text: str) -> int:
    """How many of ``facts`` survive in ``text``."""
    return sum(1 for f in facts if present(f, text))


def read_conversation(lines: Iterable[str], *, source: str) -> list[Message]:
    """JSON lines ``{"role", "content"}``; InvalidInput naming the line on anything else."""
    out: list[Message] = []
    for where, item in _records(lines, source):
        role, content = item.get("role"), item.get("content")
        if role not in ("user", "assistant") or not isinstance(content, str) or not content.strip():
            raise InvalidInput(f"{where}: expected {{\"role\": \"user\"|\"assistant\", "
                               "\"content\": non-empty text}")
        out.append((role, content))
    if not out:
        raise InvalidInput(f"{source}: no messages")
    return out


def read_expectations(lines: Iterable[str], *, source: str) -> list[Planted]:
    """JSON lines ``{"expected", "question"?}``; InvalidInput naming the line otherwise."""
    out: list[Planted] = []
    for where, item in _records(lines, source):
        expected, question = item.get("expected"), item.get("question")
        if not isinstance(expected, str) or not expected.strip():
            raise InvalidInput(f"{where}: \"expected\" must be non-empty text")
        if question is not None and not isinstance(question, str):
            raise InvalidInput(f"{where}: \"question\" must be text when given")
        out.append(Planted("given", "", expected.strip(), question))
    if not out:
        raise InvalidInput(f"{source}: no expectations")
    return out


def _records(lines: Iterable[str], source: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """("source:line", record) for each non-blank line; InvalidInput names a bad one."""
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield f"{source}:{n}", json_object(line)
        except InvalidInput as exc:
            raise InvalidInput(f"{source}:{n}: {exc}") from None
