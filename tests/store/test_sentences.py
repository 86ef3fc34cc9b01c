"""One sentence, one memory: the retention guard keeps a sentence once per specific
in it (``specific: sentence``); storing those keeps one row with a source per batch,
and the listing shows each sentence once, with who stated it."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import select

from recap.core.memories.facts import Fact
from recap.core.specifics import contains
from recap.db import transaction
from recap.models import Memory, MemorySource
from recap.sessions.overrides import memories
from recap.store.rows import save_memories
from recap.store.sentences import plain_fact
from tests.helpers import seed

SENTENCE = "The user said: Hi, I'm Maya Okafor, SRE at Larkspur Analytics."
KEYS = ("Okafor", "SRE", "Larkspur", "Analytics")


def guard(key: str, sentence: str = SENTENCE) -> Fact:
    return Fact(f"{key}: {sentence}", "fact", 2, source="guard")


@pytest.mark.parametrize(("fact", "plain"), [
    (f"Okafor: {SENTENCE}", SENTENCE),
    ("58: The user said: Index finished at 10:58.", "The user said: Index finished at 10:58."),
    ("36: 36 succeeded, 1 failed.", "36 succeeded, 1 failed."),
    # A key the rest does not state is part of the fact.
    ("2024-03-14: the flight was moved.", "2024-03-14: the flight was moved."),
    ("The user's dog is called Biscuit.", "The user's dog is called Biscuit."),
    ("Note: the user prefers tea.", "Note: the user prefers tea."),  # not a specific
])
def test_plain_fact_drops_only_a_key_its_sentence_states(fact: str, plain: str) -> None:
    assert plain_fact(fact) == plain


def stored() -> list[tuple[str, list[tuple[str, int | None]]]]:
    with transaction() as s:
        return [(m.fact, [(x.kind, x.run_id) for x in s.scalars(
            select(MemorySource).where(MemorySource.memory_id == m.id)
            .order_by(MemorySource.id))])
            for m in s.scalars(select(Memory).order_by(Memory.id))]


def test_a_sentence_kept_under_several_keys_is_stored_once_with_a_source_per_batch() -> None:
    seed("okafor", 2)
    other = guard("10:58", "The user said: Index finished at 10:58.")
    with transaction() as s:
        first = save_memories("okafor", [guard(k) for k in KEYS] + [other], db=s, first_id=1,
                              last_id=20, run_id=1)
    assert len(set(first)) == 2 and first[:4] == [first[0]] * 4
    with transaction() as s:  # a later fold keeps the sentence under another key
        again = save_memories("okafor", [guard("Maya")], db=s, first_id=21, last_id=40,
                              run_id=2)
    assert again == [first[0]]
    assert stored() == [(f"Okafor: {SENTENCE}", [("guard", 1), ("guard", 2)]),
                        (other.fact, [("guard", 1)])]
    # The one row holds every key it was kept for: the retention guard's promise stands.
    assert all(contains(stored()[0][0], k) for k in (*KEYS, "Maya"))
    listed = memories("okafor")
    assert [(m["fact"], m["kind"]) for m in listed] == [
        (SENTENCE, "guard"), ("The user said: Index finished at 10:58.", "guard")]


def test_a_sentence_stored_once_per_key_before_is_listed_once() -> None:
    seed("legacy-keys", 2)
    with transaction() as s:
        for i, key in enumerate(KEYS):
            fact = f"{key}: {SENTENCE}"
            row = Memory(session_id="legacy-keys", scope="s:legacy-keys", fact=fact,
                         category="fact", importance=2 + (i == 2),
                         fact_hash=hashlib.sha256(fact.encode()).hexdigest(),
                         first_message_id=1, last_message_id=9)
            s.add(row)
            s.flush()
            s.add(MemorySource(memory_id=row.id, session_id="legacy-keys",
                               kind="assistant" if i == 3 else "guard", first_message_id=1,
                               last_message_id=9, run_id=5))
    [entry] = memories("legacy-keys")
    assert entry["fact"] == SENTENCE and entry["importance"] == 3  # the most important row
    assert len(entry["ids"]) == 4 and entry["id"] == entry["ids"][0]
    assert entry["kind"] == "assistant"  # the strongest of its sources
    assert sorted(x["kind"] for x in entry["sources"]) == ["assistant", "guard"]
