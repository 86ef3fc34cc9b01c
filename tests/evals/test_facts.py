"""Planted facts and the eval's input files (pure)."""

from __future__ import annotations

import pytest

from recap.errors import InvalidInput
from recap.evals.facts import (
    plant,
    present,
    read_conversation,
    read_expectations,
    retained,
    weave,
)

pytestmark = pytest.mark.unit


def test_planting_is_deterministic_and_covers_every_kind() -> None:
    facts = plant(8, seed=3)
    assert facts == plant(8, seed=3)
    assert [f.kind for f in facts[:4]] == ["name", "number", "date", "preference"]
    assert len({f.expected for f in facts}) == 8
    for f in facts:
        assert f.expected in f.sentence and f.question


def test_weaving_puts_each_fact_in_a_user_turn_before_the_last_tenth() -> None:
    filler = [("user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(100)]
    facts = plant(5)
    woven = weave(filler, facts)
    assert len(woven) == len(filler)
    for f in facts:
        where = [i for i, (_, c) in enumerate(woven) if f.sentence in c]
        assert len(where) == 1 and woven[where[0]][0] == "user" and where[0] < 90


def test_weaving_refuses_more_facts_than_user_turns() -> None:
    with pytest.raises(InvalidInput, match="3 facts need at least 3 user turns"):
        weave([("user", "a"), ("assistant", "b")], plant(3))


def test_presence_ignores_case_and_spacing() -> None:
    fact = plant(3)[2]
    assert present(fact, "see you on " + fact.expected.upper().replace(" ", "\n "))
    assert retained(plant(3), "nothing here") == 0


@pytest.mark.parametrize("line, problem", [
    ("{bad", "in.jsonl:1: invalid JSON"),
    ("[1]", "in.jsonl:1: expected a JSON object"),
    ('{"role": "system", "content": "x"}', "in.jsonl:1: expected"),
    ('{"role": "user", "content": " "}', "in.jsonl:1: expected"),
])
def test_bad_conversation_lines_are_named(line: str, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        read_conversation([line], source="in.jsonl")


def test_expectations_need_text_and_optional_questions() -> None:
    got = read_expectations(['{"expected": "48213-K", "question": "Badge?"}', "",
                             '{"expected": "Oslo"}'], source="e")
    assert [(g.expected, g.question) for g in got] == [("48213-K", "Badge?"), ("Oslo", None)]
    with pytest.raises(InvalidInput, match='e:1: "expected" must be non-empty text'):
        read_expectations(['{"expected": 5}'], source="e")
    with pytest.raises(InvalidInput, match="e: no expectations"):
        read_expectations([], source="e")
