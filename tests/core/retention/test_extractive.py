"""The fold Recap keeps by itself when no model answer was usable (pure)."""

from __future__ import annotations

import pytest

from recap.core.prompts.summarize import Turn
from recap.core.retention.details import DETAILS_HEADER
from recap.core.retention.extractive import HEADER, LINE_WORDS, fold, is_extractive, line

pytestmark = pytest.mark.unit


def words(text: str) -> int:
    return len(text.split())


def test_the_batch_follows_the_previous_prose_under_its_label() -> None:
    previous = f"The user plans a trip.\n\n{DETAILS_HEADER}\n- flight TP 1357"
    text = fold(previous, [Turn(1, "user", "Book the hotel in Lisbon."),
                           Turn(2, "assistant", "Done: Hotel Avenida, 3 nights.")],
                max_tokens=1000, count=words)
    assert text.split("\n") == ["The user plans a trip.", "", HEADER,
                                "- The user said: Book the hotel in Lisbon.",
                                "- The assistant said: Done: Hotel Avenida, 3 nights."]
    assert is_extractive(text) and not is_extractive(previous)


def test_a_second_fallback_goes_on_under_the_same_label() -> None:
    first = fold(None, [Turn(1, "user", "one")], max_tokens=100, count=words)
    second = fold(first, [Turn(2, "user", "two")], max_tokens=100, count=words)
    assert second.split("\n").count(HEADER) == 1
    assert second.endswith("- The user said: one\n- The user said: two")


def test_over_the_cap_the_oldest_new_lines_go_first_then_the_prose_from_its_end() -> None:
    turns = [Turn(i, "user", f"message {i} " * 5) for i in range(10)]
    text = fold("prose " * 20, turns, max_tokens=60, count=words)
    assert words(text) <= 60
    assert HEADER in text and "message 9" in text and "message 0" not in text
    tight = fold("prose " * 20, turns, max_tokens=25, count=words)
    assert words(tight) <= 25 + words(HEADER) + words(line(turns[-1]))
    assert "message 9" in tight


def test_each_line_is_clipped_and_never_spans_lines() -> None:
    said = line(Turn(1, "tool", "word\n" * (LINE_WORDS + 10)))
    assert "\n" not in said and said.endswith(" ...")
    assert said.startswith("- The tool said: ") and words(said) == LINE_WORDS + 5
