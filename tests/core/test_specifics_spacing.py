"""Specifics compare with white space and thousands separators ignored (pure): the
user's "TP 1357" is the model's "TP1357", "80kg" is "80 kg", "9:30am" is "9:30 am",
"2,400" is "2400", in the guard's checks and in provenance alike."""

from __future__ import annotations

import pytest

from recap.core.memories.provenance import attribute
from recap.core.prompts.summarize import Turn
from recap.core.retention.guard import missing, of_turn
from recap.core.specifics import contains, extract_specifics

pytestmark = pytest.mark.unit

SAME = [("TP 1357", "TP1357"), ("80kg", "80 kg"), ("9:30am", "9:30 am"), ("2,400", "2400"),
        ("LH 0441", "LH0441"), ("+351 21 000 4242", "+351210004242")]


@pytest.mark.parametrize(("one", "other"), SAME)
def test_spacing_and_thousands_separators_do_not_matter(one: str, other: str) -> None:
    for text, specific in ((one, other), (other, one)):
        assert contains(f"booked {text} today", specific), (text, specific)
        for s in extract_specifics(f"booked {specific} today"):
            assert contains(f"booked {text} today", s), (text, s)


@pytest.mark.parametrize(("text", "specific"), [
    ("150 items", "15"), ("TP13570", "TP1357"), ("a 1357 b", "TP1357"), ("80 kgs", "80kg"),
])
def test_a_specific_still_does_not_run_on(text: str, specific: str) -> None:
    assert not contains(text, specific)


@pytest.mark.parametrize(("said", "fact"), [
    ("I'm on flight TP 1357 tomorrow.", "The user is on flight TP1357 tomorrow."),
    ("I'm on flight TP1357 tomorrow.", "The user is on flight TP 1357 tomorrow."),
    ("I weigh 80kg now.", "The user weighs 80 kg now."),
    ("My class starts at 9:30am daily.", "The user's class starts at 9:30 am daily."),
    ("My rent went up to 2,400 a month.", "The user's rent went up to 2400 a month."),
])
def test_the_users_own_fact_stays_theirs_however_it_is_spaced(said: str, fact: str) -> None:
    assert attribute(fact, "user", [said]) == "user"


def test_the_guard_keeps_a_code_however_the_summary_spaces_it() -> None:
    turn = Turn(1, "user", "My flight is TP 1357 and I land at 9:30am with 23 kg.")
    need = of_turn(turn)
    assert missing(need, summary="Flight TP1357, lands 9:30 am, bag 23kg.") == frozenset()
    assert missing(need, summary="Flight 1357.") != frozenset()
