"""recap metrics: the token series of title calls (title_runs)."""

from __future__ import annotations

from recap.db import transaction
from recap.models import TitleRun
from recap.ops.exporter import families
from tests.jobs.test_metrics import add_session, snapshot


def test_title_calls_have_their_own_token_series() -> None:
    add_session("titled")
    with transaction() as s:
        s.add_all([TitleRun(session_id="titled", status="titled", input_tokens=40,
                            output_tokens=6),
                   TitleRun(session_id="titled", status="failed", input_tokens=30,
                            output_tokens=0)])
    snap = snapshot()
    assert snap.title_tokens == (70, 6)
    by_task = {(f.name, s.labels["task"]): s.value for f in families(snap)
               if f.name.startswith("recap_api_") for s in f.samples}
    assert by_task[("recap_api_input_tokens", "generate_title")] == 70
    assert by_task[("recap_api_output_tokens", "generate_title")] == 6
