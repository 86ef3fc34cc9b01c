"""A frozen summary (the previous one back, the new messages ignored) is refused."""

from __future__ import annotations

import pytest

from recap.core.prompts.frozen import MIN_NOVEL, frozen

pytestmark = pytest.mark.unit

PREVIOUS = "The user is planning a launch in Lisbon with the assistant."
BATCH = ["I booked flight TP1357 with TAP, booking code QX7K2P, for March 14th.",
         "Maria Okafor from procurement approved the budget of $2,400 yesterday.",
         "Noted: flight TP1357, code QX7K2P, Maria Okafor approved $2,400."]


def test_the_previous_summary_back_word_for_word_is_frozen() -> None:
    assert frozen(PREVIOUS, PREVIOUS, BATCH) == "the model returned the previous summary unchanged"
    assert frozen(PREVIOUS, "  " + PREVIOUS.replace(" ", "\n  ") + "\n", BATCH) is not None


def test_a_summary_that_adds_nothing_of_the_new_messages_is_frozen() -> None:
    reworded = "The assistant and the user plan a launch in Lisbon."
    why = frozen(PREVIOUS, reworded, BATCH)
    assert why is not None and "adds 0 of the" in why


def test_an_update_with_the_new_messages_is_not_frozen() -> None:
    updated = PREVIOUS + " They booked flight TP1357 (code QX7K2P); Maria approved $2,400."
    assert frozen(PREVIOUS, updated, BATCH) is None


def test_an_answer_about_something_else_is_not_an_echo() -> None:
    assert frozen(PREVIOUS, "Short.", BATCH) is None  # no words to judge
    assert frozen(PREVIOUS, "Quarterly revenue grew strongly overall.", BATCH) is None


def test_small_talk_warrants_no_change_and_a_first_summary_is_never_frozen() -> None:
    chatter = ["ok thanks", "you're welcome", "great"]
    assert len({w for t in chatter for w in t.split()}) < MIN_NOVEL
    assert frozen(PREVIOUS, PREVIOUS, chatter) is None
    assert frozen(None, "anything", BATCH) is None and frozen("  ", "x", BATCH) is None


def test_words_the_previous_summary_already_has_are_not_new() -> None:
    # The batch repeats what the summary says: nothing new is warranted.
    assert frozen(PREVIOUS, PREVIOUS, [PREVIOUS] * 3) is None
