"""A message of two million characters of quotation marks (paired „“ as German
writes them, closed by one mark of two; every script's marks nested; never
closed) or of line breaks folds within the default task time limit, with mining
and the retention guard on, and what the user said before it is kept. Every
scan of it is linear (tests/core/test_scan_linear.py). Public API, a real worker,
PostgreSQL and the real SDK against the local Messages API server."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recap.api.ingest import add_message
from recap.config.timing import TIME_LIMIT_DEFAULT
from recap.db import transaction
from recap.testing import FakeAnthropic
from tests.checks import check_invariants
from tests.helpers import run_and_wait, runs, sentence, statuses

SETTINGS = {"RECAP_POLICY": "threshold", "RECAP_TRIGGER_MESSAGES": 6,
            "RECAP_TRIGGER_TOKENS": 100, "RECAP_BATCH_SIZE": 200, "RECAP_KEEP_RECENT": 2,
            "RECAP_RETENTION_GUARD": "true", "RECAP_EXTRACT_MEMORIES": "true",
            # The default task limit and the lease derived from it, not the test
            # environment's short ones: on a machine busy with other tests a 2 MB
            # fold can outlast a 30-second lease, and a second job would take over.
            "RECAP_TASK_TIME_LIMIT_S": str(TIME_LIMIT_DEFAULT),
            "RECAP_TASK_SOFT_TIME_LIMIT_S": "", "RECAP_LEASE_S": "",
            "RECAP_VISIBILITY_TIMEOUT_S": ""}
SAID = "My order is ORD-77812 and the refund of $45.99 is due on 2026-03-15."
SIZE = 2_000_000
SHAPES = {
    "paired „“": "„“",
    "every script, nested": "„«“‹「『\"" + "\"』」›”»“",
    "never closed": "«",
    "line breaks": "\r\u2028\u2029\x85\x0b\x0c",
}


@pytest.mark.slow
@pytest.mark.timeout(TIME_LIMIT_DEFAULT + 60)
@pytest.mark.usefixtures("celery_worker_thread")
@pytest.mark.parametrize("unit", list(SHAPES.values()), ids=list(SHAPES))
def test_two_million_quotation_marks_fold_within_the_task_limit(
        unit: str, fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**SETTINGS)
    sid = f"quotes-{list(SHAPES.values()).index(unit)}"
    pasted = (unit * (SIZE // len(unit) + 1))[:SIZE]
    texts = {add_message(sid, "user", f"{SAID}\n{pasted}"): f"{SAID}\n{pasted}"}
    for i in range(6):
        text = sentence(i, 30)
        texts[add_message(sid, "assistant" if i % 2 == 0 else "user", text)] = text
    # How long it takes is the scan benchmark's to say (recap bench --only scan), not
    # a test's: here it must fold, within the default task limit a worker gives it.
    run_and_wait(sid, final={"applied", "dead", "failed"}, timeout=TIME_LIMIT_DEFAULT)
    # A second job queued meanwhile (the sweeper's) finds the lease held and skips.
    assert [s for s in statuses(sid) if s != "skipped"] == ["applied"], runs(sid)[0].error
    assert all(r.reason == "lease held by another job" for r in runs(sid)
               if r.status == "skipped")
    with transaction() as s:
        assert check_invariants(s, written={sid: list(texts)},
                                written_texts={sid: texts}) == []
