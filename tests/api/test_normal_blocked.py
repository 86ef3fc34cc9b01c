"""A stale normal_blocked flag: the flag holds only under the
thresholds it was computed under, so changing them (per session or globally)
re-opens the normal rule at once, for the hook and for the sweeper alike."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recap.api.ingest import add_message, after_reply
from recap.db import transaction, utcnow
from recap.sessions.overrides import configure_session
from recap.settings import get_settings
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from recap.worker.jobs.sweeper import find_due
from tests.helpers import seed, session_row

# A full batch of 5 small messages stays under 500 tokens while the session as a
# whole passes it: the normal rule cannot fire until a summary applies.
BLOCKING = {"RECAP_POLICY": "threshold",
            "RECAP_TRIGGER_MESSAGES": 10, "RECAP_TRIGGER_TOKENS": 500, "RECAP_BATCH_SIZE": 5,
            "RECAP_KEEP_RECENT": 4}


def due() -> list[str]:
    with transaction() as s:
        return find_due(get_settings(), db=s, now=utcnow(), limit=100)


def block(sid: str) -> None:
    """Make ``sid`` normal_blocked under the current thresholds, with no job pending."""
    seed(sid, 14)
    out = summarize(sid, job=Job("t-block"), res=get_resources())
    assert out.status == "skipped" and out.reason.startswith("below thresholds: 14 messages")
    row = session_row(sid)
    assert row is not None and row.normal_blocked and row.enqueued_at is None
    assert row.normal_blocked_under == get_settings().thresholds_key()
    add_message(sid, "assistant", "one more short reply")
    assert after_reply(sid) is False  # blocked: the hook waits
    assert sid not in due()  # and so does the sweeper


@pytest.mark.parametrize("where", ["session", "global"])
def test_a_change_of_thresholds_lifts_the_block_at_once(
        where: str, settings_env: Callable[..., None]) -> None:
    settings_env(**BLOCKING)
    block("stale")
    # Now a 5-message batch (~300 tokens) is above the token trigger.
    if where == "session":
        configure_session("stale", {"trigger_tokens": 100})
    else:
        settings_env(**{**BLOCKING, "RECAP_TRIGGER_TOKENS": 100})
    assert "stale" in due()  # the sweeper sees it due
    # And the hook queues it. (Not asserting the pending marker: a worker started
    # by an earlier test may already have claimed the job, which clears it.)
    assert after_reply("stale") is True

