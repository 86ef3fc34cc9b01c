"""The retention guard's linearity at the top of the sizes a message can have: two
folds of 15-25 s each, so in the system tier (the growth itself is
checked at small sizes, in the unit tier: tests/core/test_scan_linear.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.core.test_scan_linear import (
    GROWTH,
    LIMIT,
    MAX_MESSAGE_CHARS,
    _best,
    _distinct_ids,
    _fold,
    _glued_ids,
)

pytestmark = pytest.mark.system


@pytest.mark.slow  # two folds of 15-25 s each at the top size on a quiet machine
@pytest.mark.timeout(900)  # past the suite's 300 s on a loaded machine
@pytest.mark.parametrize("make", [_distinct_ids, _glued_ids])
def test_the_guard_is_linear_up_to_the_longest_message(make: Callable[[int], str]) -> None:
    # The same growth, at the top of the sizes a message can have.
    small, large = make(MAX_MESSAGE_CHARS // GROWTH), make(MAX_MESSAGE_CHARS)
    a, b = _best(_fold, small, large, calls=1)
    assert b / max(a, 1e-4) <= LIMIT, (a, b)
