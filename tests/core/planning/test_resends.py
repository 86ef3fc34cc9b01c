"""A model whose latest folds were all kept extractively is asked once, without
resends, with a probe at full resends every few folds (pure)."""

from __future__ import annotations

import pytest

from recap.core.planning.resends import (
    FALLBACK_STREAK,
    PROBE_EVERY,
    WINDOW,
    FoldOutcome,
    allowed,
    streak,
    withheld_note,
)

pytestmark = pytest.mark.unit

FULL = FoldOutcome(True, 3)  # kept extractively after every resend
ONCE = FoldOutcome(True, 0)  # kept extractively, asked once
GOOD = FoldOutcome(False, 0)


def test_full_resends_until_a_streak_of_extractive_folds() -> None:
    assert allowed((), 3) == 3
    assert allowed((FULL,) * (FALLBACK_STREAK - 1), 3) == 3
    assert allowed((FULL,) * FALLBACK_STREAK, 3) == 0
    # One usable fold among the latest ends the streak.
    assert allowed((GOOD,) + (FULL,) * FALLBACK_STREAK, 3) == 3
    assert allowed((FULL, GOOD, FULL, FULL), 3) == 3


def test_a_probe_with_full_resends_after_folds_asked_once() -> None:
    history: list[FoldOutcome] = [FULL] * FALLBACK_STREAK  # oldest first
    given = []
    for _ in range(3 * PROBE_EVERY):
        recent = tuple(reversed(history))[:WINDOW]
        n = allowed(recent, 3)
        given.append(n)
        history.append(FULL if n else ONCE)
    # Asked once PROBE_EVERY - 1 times, then a probe, and again.
    assert given == ([0] * (PROBE_EVERY - 1) + [3]) * 3


def test_a_model_that_recovers_gets_its_resends_back() -> None:
    recent = (GOOD,) + (ONCE,) * (WINDOW - 1)
    assert allowed(recent, 2) == 2


def test_nothing_to_withhold_and_bad_settings() -> None:
    assert allowed((FULL,) * WINDOW, 0) == 0
    with pytest.raises(ValueError, match="at least 0"):
        allowed((), -1)


def test_the_note_names_the_streak() -> None:
    assert streak((ONCE, FULL, FULL, GOOD, FULL)) == 3
    assert "last 3 folds of sessions outside any tenant were kept extractively" in \
        withheld_note((ONCE, FULL, FULL, GOOD))
    assert "last 3 folds of tenant 'acme''s sessions were kept" in \
        withheld_note((ONCE, FULL, FULL, GOOD), tenant="acme")
