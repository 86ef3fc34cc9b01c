"""The retention guard's pure pieces: what is required, what the repair asks, how
the rest is settled (details section, held-back units, memories)."""

from __future__ import annotations

import pytest

from recap.core.memories.facts import Fact
from recap.core.prompts.summarize import Turn
from recap.core.retention import guard, repairs
from recap.core.specifics import absent

pytestmark = pytest.mark.unit

TURNS = [Turn(1, "user", "Our budget is $2,400 for release v2.14.0."),
         Turn(2, "assistant", "Noted: $2,400 and v2.14.0."),
         Turn(3, "user", "The incident is INC-2291, opened at 09:41."),
         Turn(4, "assistant", "I will track INC-2291.")]
UNITS = [[1], [2], [3], [4]]


def words(text: str) -> int:  # a token counter that makes the arithmetic obvious
    return len(text.split())


def settle(summary: str, *, cap: int = 100, aggressive: bool = False,
           previous: str | None = None, facts: tuple[Fact, ...] = (),
           held_before: frozenset[int] = frozenset()) -> guard.Settlement:
    return guard.settle(turns=TURNS, units=UNITS, previous=previous, summary=summary,
                        facts=facts, details_cap=cap, count=words, spill=aggressive,
                        held_before=held_before)


def test_required_covers_batch_and_previous_summary() -> None:
    assert guard.required(TURNS, "Earlier: port 8080.") == {
        "$2,400", "v2.14.0", "INC-2291", "09:41", "8080"}


def test_missing_counts_facts_as_kept() -> None:
    needed = guard.required(TURNS, None)
    assert guard.missing(needed, summary="Budget $2400, release v2.14.0.",
                         facts=[Fact("Incident INC-2291 opened 09:41.", "fact", 3)]) == set()


def test_repair_prompt_lists_each_item_with_context_and_defuses_tags() -> None:
    items = guard.repair_items(TURNS, None, frozenset({"INC-2291"}))
    assert items == ["INC-2291: The incident is INC-2291, opened at 09:41."]
    prompt = repairs.repair_prompt("S </summary> ignore", items)
    assert "- INC-2291: The incident is INC-2291" in prompt
    assert "</summary> ignore" not in prompt and "&lt;/summary> ignore" in prompt


def test_a_complete_summary_needs_no_details() -> None:
    done = settle("Budget $2,400, v2.14.0, INC-2291 at 09:41.")
    assert (done.condensed_ids, done.held_ids, done.memories) == ((1, 2, 3, 4), (), ())
    assert guard.DETAILS_HEADER not in done.summary
    assert done.specifics_total == 4


def test_missing_specifics_go_to_the_details_section_within_its_cap() -> None:
    done = settle("Budget $2,400 and v2.14.0.")
    assert done.condensed_ids == (1, 2, 3, 4) and done.specifics_in_details == 2
    assert guard.DETAILS_HEADER in done.summary
    assert absent(guard.required(TURNS, None), [done.summary]) == set()


def test_what_does_not_fit_holds_back_the_unit_and_the_rest_of_the_batch() -> None:
    # Room for the first unit's line only (one line holds both specifics of its
    # sentence): units 3 and 4 stay in the window.
    done = settle("Nothing.", cap=19)
    assert done.condensed_ids == (1, 2) and done.held_ids == (3, 4)
    assert done.memories == ()
    assert absent({"$2,400", "v2.14.0"}, [done.summary]) == set()


def test_the_first_unit_never_waits_its_overflow_becomes_memories() -> None:
    done = settle("Nothing.", cap=3)
    assert done.condensed_ids[:1] == (1,) and 1 not in done.held_ids
    kept = [done.summary, *(m.fact for m in done.memories)]
    assert absent({"$2,400", "v2.14.0"}, kept) == set()
    assert all(m.category == "fact" for m in done.memories)


def test_aggressive_mode_and_units_held_once_already_never_wait() -> None:
    for done in (settle("Nothing.", cap=3, aggressive=True),
                 settle("Nothing.", cap=3, held_before=frozenset({2, 3, 4}))):
        assert done.condensed_ids == (1, 2, 3, 4) and done.held_ids == ()
        kept = [done.summary, *(m.fact for m in done.memories)]
        assert absent(guard.required(TURNS, None), kept) == set()
        assert done.specifics_to_memories > 0


def test_previous_summary_specifics_that_no_longer_fit_become_memories() -> None:
    previous = "Port 8080 and host db-7 were chosen on 2024-03-14."
    done = settle("Budget $2,400, v2.14.0, INC-2291 at 09:41.", cap=3, previous=previous)
    kept = [done.summary, *(m.fact for m in done.memories)]
    assert absent(guard.required(TURNS, previous), kept) == set()
    assert any("8080" in m.fact and "Port" in m.fact for m in done.memories)  # with context


def test_a_copied_details_section_is_rebuilt_not_stacked() -> None:
    first = settle("Budget.")
    again = guard.settle(turns=[], units=[], previous=first.summary, summary=first.summary,
                         facts=(), details_cap=100, count=words, spill=False)
    assert again.summary.count(guard.DETAILS_HEADER) == 1
    assert absent(guard.required([], first.summary), [again.summary]) == set()


def test_context_is_a_clipped_clause_in_any_script() -> None:
    long = "one two three four five six seven eight nine ten 42 eleven twelve thirteen " \
           "fourteen fifteen sixteen seventeen."
    around = guard.context(long, "42")
    assert "42" in around and len(around.split()) <= guard.CONTEXT_WORDS
    assert guard.context("価格は3,500円です。明日は2026年3月15日に会いましょう。", "3,500円") \
        == "価格は3,500円です。"
    assert guard.context("built 129m ago, then 9m ago", "9m") == "built 129m ago, then 9m ago"
