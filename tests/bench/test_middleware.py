"""recap/bench/middleware.py: the RecapMiddleware vs SummarizationMiddleware bench runs
its systems through create_agent and tabulates them (figures are printed, never
asserted: no timing assertions)."""

from __future__ import annotations

import pytest

from recap.bench.middleware import Row, _recap_jobs, run_system, table, transcript
from recap.integrations.langchain_middleware import RecapMiddleware


@pytest.mark.unit
def test_the_table_gives_medians_and_lists_each_run() -> None:
    runs = [[Row("no memory middleware", waits=[0.010]), Row("Recap", waits=[0.030])],
            [Row("no memory middleware", waits=[0.020]), Row("Recap", waits=[0.050])],
            [Row("no memory middleware", waits=[0.030]), Row("Recap", waits=[0.040])]]
    out = table(runs)
    assert "| Recap |" in out and "40.0 (30.0, 50.0, 40.0), 40 | +20.0 |" in out


def test_recap_runs_through_create_agent_and_is_measured() -> None:
    script, facts = transcript(30)
    assert sum(1 for role, _ in script if role == "user") == 15
    row = run_system("RecapMiddleware", script, facts, lambda row: [RecapMiddleware()],
                     _recap_jobs)
    assert len(row.waits) == 15 and row.agent_tokens > 0
    assert row.on_reply_path == 0  # Recap's summarizer never runs inside a turn
    assert 0 <= row.facts_kept <= len(facts) and 0.0 <= row.specifics <= 1.0
