"""Recap's token estimate next to the API's count: what a job records, and the
per-model ratio ``recap stats`` shows, against the fake API's own counting
(characters / 3.5, deterministic; a model's tokenizer differs, so the ratio here
measures the mechanism, not Claude)."""

from __future__ import annotations

from typing import Any

import pytest

from recap.db import transaction
from recap.llm.tokens import count_tokens
from recap.ops.stats import estimate_ratios
from recap.testing import FakeAnthropic, request_usage
from tests.helpers import LOW, run_and_wait, runs, seed

pytestmark = pytest.mark.usefixtures("celery_worker_thread")


def sent_tokens(body: dict[str, Any]) -> int:
    """tiktoken's count of everything a request sent (system + message text)."""
    return count_tokens(body["system"]) + sum(count_tokens(m["content"])
                                              for m in body["messages"])


def test_a_run_records_the_estimate_next_to_the_api_count(
        settings_env: Any, fake_api: FakeAnthropic) -> None:
    settings_env(**LOW, RECAP_TITLES_ENABLED="false", RECAP_EXTRACT_MEMORIES="true")
    seed("est", 12, words=60)
    run_and_wait("est")
    (run,) = runs("est")
    assert run.status == "applied"
    requests = list(fake_api.requests)
    assert len(requests) == 1  # one call summarizes and mines (the record_summary tool)
    # input_tokens is the API's count, exactly what the server reported...
    assert run.input_tokens == sum(request_usage(b)["input_tokens"] for b in requests)
    # ...and the estimate is Recap's own arithmetic over the parts it counted: close
    # to tokenizing each whole request, without paying for it.
    whole = sum(sent_tokens(b) for b in requests)
    assert run.estimated_input_tokens is not None
    assert abs(run.estimated_input_tokens - whole) <= 0.03 * whole, (
        run.estimated_input_tokens, whole)
    with transaction() as s:
        ratios = estimate_ratios(db=s)
    assert ratios == {run.model: round(run.estimated_input_tokens / run.input_tokens, 3)}


def test_the_ratio_takes_each_models_latest_runs(fake_api: FakeAnthropic) -> None:
    from recap.models import SummaryRun

    with transaction() as s:
        s.add_all([SummaryRun(session_id="r", status="applied", model="m1", input_tokens=100,
                              estimated_input_tokens=50)]
                  + [SummaryRun(session_id="r", status="applied", model="m1",
                                input_tokens=100, estimated_input_tokens=90)
                     for _ in range(3)]
                  + [SummaryRun(session_id="r", status="failed", model="m2", input_tokens=10,
                                estimated_input_tokens=12),
                     SummaryRun(session_id="r", status="failed", model="m2", input_tokens=5,
                                estimated_input_tokens=None)])
    with transaction() as s:
        assert estimate_ratios(db=s, runs=3) == {"m1": 0.9, "m2": 1.2}
        assert estimate_ratios(db=s, runs=4) == {"m1": 0.8, "m2": 1.2}
