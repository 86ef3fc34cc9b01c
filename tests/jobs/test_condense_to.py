"""RECAP_CONDENSE_TO through a real job: one fold condenses down to the low-water mark
(recap/core/planning/policy.py), not just one batch. A real in-process worker, Redis,
PostgreSQL and the local Messages API server."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recap.testing import FakeAnthropic
from tests.helpers import LOW, assert_invariants, run_and_wait, runs, seed, session_row

pytestmark = pytest.mark.usefixtures("celery_worker_thread")


@pytest.mark.parametrize("condense_to", [0.0, 0.3])
def test_a_capacity_fold_condenses_down_to_the_low_water_mark(
        fake_api: FakeAnthropic, settings_env: Callable[..., None], condense_to: float) -> None:
    sid = f"low-water-{condense_to}"
    ids = seed(sid, 40)
    row = session_row(sid)
    assert row is not None
    budget = int(row.active_tokens / 0.85)  # 85%: the capacity rule fires
    # Only the capacity rule (the normal one's token trigger is out of reach), so
    # nothing is due after the fold and no follow-up runs.
    settings_env(**{**LOW, "RECAP_TRIGGER_TOKENS": 10**6}, RECAP_CONTEXT_BUDGET_TOKENS=budget,
                 RECAP_CONDENSE_TO=condense_to)
    run_and_wait(sid, n=1, final={"applied", "failed", "dead"}, timeout=30)
    first = runs(sid)[0]
    reason = first.reason or ""
    assert first.status == "applied" and reason.startswith("capacity: context at 85%")
    if condense_to:
        assert reason.endswith("; condensing to 30% of the budget")
        assert first.messages_condensed > 5  # past the batch of 5 ...
        row = session_row(sid)
        assert row is not None
        assert row.active_tokens <= 0.3 * budget  # ... down to the mark, in one fold
    else:
        assert first.messages_condensed == 5
    assert [r.status for r in runs(sid)] == ["applied"]
    assert_invariants({sid: ids})
