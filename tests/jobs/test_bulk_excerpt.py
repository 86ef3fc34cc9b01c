"""RECAP_SUMMARIZE_BULK_TOKENS through a real job: the summarizer is sent excerpts of
the pasted blocks, the run's reason counts what was left out, and the guard still
judges the stored messages. A real in-process worker, Redis, PostgreSQL and the
local Messages API server."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from recap.api.ingest import add_message
from recap.db import transaction
from recap.testing import FakeAnthropic, ok
from recap.worker.jobs.archive import resummarize
from recap.worker.jobs.resources import get_resources
from tests.checks import check_invariants
from tests.helpers import LOW, message_ids, run_and_wait, runs
from tests.jobs.test_scenarios import conversation

pytestmark = pytest.mark.usefixtures("celery_worker_thread")

MARKER = re.compile(r"^    \[\.\.\. \d+ lines? of this block not sent to the summarizer \.\.\.\]$",
                    re.M)


@pytest.mark.parametrize("cap", [0, 100])
def test_a_job_sends_excerpts_and_deletes_exactly_the_condensed_rows(
        fake_api: FakeAnthropic, settings_env: Callable[..., None], cap: int) -> None:
    sid = f"bulk-{cap}"
    # The demo's first messages: pasted pod listings, a values file, a traceback.
    texts = {add_message(sid, role, text): text for role, text in conversation(12)}
    ids = list(texts)
    settings_env(**LOW, RECAP_SUMMARIZE_BULK_TOKENS=cap)
    run_and_wait(sid, final={"applied", "failed", "dead"})
    run = runs(sid)[0]
    assert run.status == "applied", run.error
    reason = run.reason or ""
    summary_call = fake_api.prompts()[0]
    pasted = texts[ids[2]].split("\n")  # a kubectl listing, 510 tokens
    if cap:
        assert re.search(r"; bulk: \d+ lines of \d+ pasted blocks? not sent$", reason), reason
        assert MARKER.search(summary_call)
        assert pasted[3] in summary_call and pasted[-4] not in summary_call
    else:
        assert "bulk:" not in reason and not MARKER.search(summary_call)
        assert all(line in summary_call for line in pasted)
    # The apply deleted exactly the condensed rows, and nothing of them is lost.
    first, last = run.first_message_id, run.last_message_id
    assert first is not None and last is not None
    condensed = [i for i in ids if first <= i <= last]
    assert len(condensed) == run.messages_condensed >= 5
    assert message_ids(sid) == [i for i in ids if i not in condensed]
    with transaction() as s:
        assert check_invariants(s, written={sid: ids}, written_texts={sid: texts}) == []


def test_resummarize_sends_the_archive_excerpted_too(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    sid = "bulk-archive"
    ids = [add_message(sid, role, text) for role, text in conversation(12)]
    settings_env(**LOW, RECAP_SUMMARIZE_BULK_TOKENS=100, RECAP_ARCHIVE_SUMMARIZED="true")
    run_and_wait(sid, final={"applied", "failed", "dead"})
    assert [r.status for r in runs(sid)] == ["applied"]
    fake_api.script(ok("Rebuilt from the archive."))
    outcome = resummarize(sid, res=get_resources())
    assert outcome.status == "applied"
    assert re.search(r"; bulk: \d+ lines of \d+ pasted blocks? not sent$", outcome.reason)
    assert MARKER.search(fake_api.prompts()[-1])
    with transaction() as s:
        assert check_invariants(s, written={sid: ids}) == []
