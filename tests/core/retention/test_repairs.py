"""When the retention guard calls repair for a model: a running success rate."""

from __future__ import annotations

import pytest

from recap.core.retention.repairs import (
    REPAIR_MIN_TRIES,
    REPAIR_PROBE_EVERY,
    RepairOutcome,
    should_repair,
    success_rate,
)

pytestmark = pytest.mark.unit

FAILED = RepairOutcome(called=True, helped=False)
HELPED = RepairOutcome(called=True, helped=True)
SKIPPED = RepairOutcome(called=False, helped=False)


def test_too_few_tries_to_judge_keeps_calling() -> None:
    assert should_repair([])
    assert should_repair([FAILED] * (REPAIR_MIN_TRIES - 1))


def test_repairs_that_never_help_stop_and_are_probed_again() -> None:
    assert not should_repair([FAILED] * REPAIR_MIN_TRIES)
    assert not should_repair([SKIPPED] * (REPAIR_PROBE_EVERY - 1) + [FAILED] * REPAIR_MIN_TRIES)
    assert should_repair([SKIPPED] * REPAIR_PROBE_EVERY + [FAILED] * REPAIR_MIN_TRIES)


def test_repairs_that_help_often_enough_go_on() -> None:
    assert should_repair([HELPED] + [FAILED] * 4)  # 20%
    assert success_rate([HELPED, FAILED, SKIPPED]) == 0.5
    assert success_rate([SKIPPED]) is None
