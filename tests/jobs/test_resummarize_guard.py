"""``recap resummarize`` runs the retention guard: a rebuilt summary that drops what
the summary it replaces keeps, or the user's specifics in the archive, gets them
back in its details section (or as memories of the session), never only in the
archive; an answer that only echoes Recap's prompt changes nothing. Real
PostgreSQL, worker and the local Messages API server."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import func, select

from recap.api.ingest import add_message
from recap.core.retention.details import DETAILS_HEADERS
from recap.core.retention.guard import missing, of_summary
from recap.core.retention.salience import Origin
from recap.db import transaction
from recap.errors import UnusableSummary
from recap.models import SummaryRun
from recap.sessions.overrides import memories
from recap.testing import FakeAnthropic, ok
from recap.worker.jobs.archive import resummarize
from recap.worker.jobs.resources import get_resources
from tests.helpers import LOW, run_and_wait, sentence, session_of, statuses

pytestmark = pytest.mark.usefixtures("celery_worker_thread")

SAID = ["I'm on flight TP 1357 on 3 March 2026, booking code QX7K2P.",
        "My gate code is 4412 and I land at 9:30am.",
        "The hotel costs 2,400 euros for the week."]


def history(sid: str) -> None:
    """Two folds of a conversation whose user states specifics, archived."""
    for i in range(16):
        text = SAID[i // 2] if i % 2 == 0 and i // 2 < len(SAID) else sentence(i, 20)
        add_message(sid, "user" if i % 2 == 0 else "assistant", text)
    run_and_wait(sid, n=2, final={"applied", "dead"})
    assert statuses(sid) == ["applied", "applied"]


@pytest.fixture
def guarded(settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_ARCHIVE_SUMMARIZED="true", RECAP_RETENTION_GUARD="true")


@pytest.mark.usefixtures("guarded")
def test_a_rebuild_that_drops_specifics_gets_them_back(fake_api: FakeAnthropic) -> None:
    history("rb")
    before = session_of("rb").rolling_summary or ""
    assert missing(of_summary(before), summary="x") != frozenset()  # it keeps specifics
    fake_api.script(ok("The user is travelling."))  # a bare answer that keeps none
    outcome = resummarize("rb", res=get_resources())
    assert outcome.status == "applied"
    after = session_of("rb").rolling_summary or ""
    assert after.startswith("The user is travelling.")
    kept = [after, *(m["fact"] for m in memories("rb"))]
    assert missing(of_summary(before), summary="\n".join(kept)) == frozenset()
    # The user's own specifics are in the details section under the user's header.
    stated = after.split(DETAILS_HEADERS[Origin.USER], 1)[1]
    for specific in ("TP 1357", "QX7K2P", "4412", "9:30am", "2,400"):
        assert specific in stated or specific.replace(" ", "") in stated, (specific, after)
    assert session_of("rb").summary_version == 3


@pytest.mark.usefixtures("guarded")
def test_an_answer_that_only_echoes_the_prompt_changes_nothing(
        fake_api: FakeAnthropic) -> None:
    history("echo")
    before = session_of("echo")
    fake_api.script(ok("The updated summary text, at most 1024 tokens."))
    with pytest.raises(UnusableSummary):
        resummarize("echo", res=get_resources())
    after = session_of("echo")
    assert (after.rolling_summary, after.summary_version, after.lease_token) == (
        before.rolling_summary, before.summary_version, None)
    with transaction() as s:
        assert s.scalar(select(func.count()).select_from(SummaryRun)
                        .where(SummaryRun.session_id == "echo")) == 2
