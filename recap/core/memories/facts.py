"""Memories: parsing and normalizing the facts a model mined from a batch (pure)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from recap.core.specifics import absent, extract_specifics
from recap.core.text import sanitize
from recap.errors import InvalidExtraction

# The fixed set of categories (memories.category); anything else becomes "other".
CATEGORIES = ("preference", "personal", "work", "plan", "fact", "other")
# Bounds on what one answer can store (model output is not trusted): a fact is a
# sentence or two, and a batch rarely holds more than a handful. Longer facts
# and those past the count are dropped (the retention guard then keeps their
# specifics from the summary, as for any fact the model left out).
MAX_FACT_CHARS = 500
MAX_FACTS = 50


@dataclass(frozen=True)
class Fact:
    fact: str
    category: str
    importance: int
    # The id of an existing memory (of the same user or session) this fact replaces,
    # as the model answered it; checked against the scope when saved, never trusted.
    replaces: int | None = None
    # Who stated it (recap.models.SOURCE_KINDS): as the model claims it until the job
    # attributes it (recap.core.memories.provenance.attribute); "guard" for the guard's.
    source: str = "user"

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.fact.encode("utf-8")).hexdigest()


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.I)


def parse_facts(text: str) -> list[Fact]:
    """Normalized, de-duplicated facts from the model's answer; InvalidExtraction if
    it is not a JSON array of objects with a non-empty ``fact``."""
    try:
        data = json.loads(_FENCE.sub("", text.strip()))
    except ValueError as exc:
        raise InvalidExtraction(f"memory extraction answer is not JSON: {exc}") from None
    if not isinstance(data, list):
        raise InvalidExtraction(f"memory extraction answer is a {type(data).__name__}, "
                                "not a JSON array")
    facts: dict[str, Fact] = {}
    for item in data:
        fact = normalize(item)
        if fact is not None:
            facts.setdefault(fact.fact, fact)
    return list(facts.values())[:MAX_FACTS]


def normalize(item: Any) -> Fact | None:
    """One fact with category from the fixed set (fallback ``other``), importance
    clamped to 1..5 and ``replaces`` (an int memory id, else None); None if it has
    no usable text or more than MAX_FACT_CHARS characters of it."""
    if not isinstance(item, dict) or not isinstance(item.get("fact"), str):
        raise InvalidExtraction("each memory must be an object with a string \"fact\"")
    text = " ".join(sanitize(item["fact"]).split())
    if not text or len(text) > MAX_FACT_CHARS:
        return None
    category = str(item.get("category", "")).strip().lower()
    if category not in CATEGORIES:
        category = "other"
    try:
        importance = int(float(item.get("importance", 3)))
    except (TypeError, ValueError):
        importance = 3
    replaces = item.get("replaces")
    if isinstance(replaces, bool) or not isinstance(replaces, int):
        replaces = None  # absent, or anything but an id: ignored
    source = item.get("source", "user")
    source = source.strip().lower() if isinstance(source, str) else "unverified"
    return Fact(text, category, min(5, max(1, importance)), replaces, source)


def may_replace(old: str, new: str) -> bool:
    """Whether a memory ``new`` may supersede ``old``: only if it keeps every specific
    of ``old`` (a model's ``replaces`` is a claim, not a proof). Otherwise both stay
    live: a specific the guard saved never leaves by a supersede, only when the
    user deletes it (forget, rewind, edit)."""
    return not absent(extract_specifics(old, whole=True), [new])
