"""The spend benchmark's rows (recap/bench/spend.py): Recap's accounted sums priced
by recap.core.spend next to the block-level model's (the benchmark itself runs the
real pipeline; here only the arithmetic of a row)."""

from __future__ import annotations

from typing import Any

import pytest

from recap.bench.spend import _row, messages_for

pytestmark = pytest.mark.unit


def test_a_row_prices_both_sides_and_their_ratio() -> None:
    def model(bodies: list[dict[str, Any]], count: Any, pauses: list[bool]) -> tuple[
            int, int, int, float, float]:
        assert pauses == [False] * len(bodies)  # no pauses: calls within the cache's life
        return 1000, 10_000, 0, 2250.0, 2250.0

    row = _row("demo", "Recap", (8000, 900, 100), [{}, {}], model, len)
    # accounted: 8000 x 0.1 + 900 x 1.25 + 100 = 2025, against 2250 modelled
    assert row == ["demo", "Recap", "8000 / 900 / 100", "10000 / 1000 / 0", 2025, 2250,
                   "0.900"]


def test_quick_runs_shorter_conversations() -> None:
    assert all(q < f for q, f in zip(messages_for(True).values(),
                                      messages_for(False).values(), strict=True))
