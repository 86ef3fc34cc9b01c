"""The sweeper backs off, per session, from sessions whose jobs find nothing to do (at
capacity, nothing outside the keep window to condense): one job and one audit row per
back-off period, not one per sweep; a changed context ends the back-off at once."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import update

from recap.api.ingest import add_message
from recap.db import transaction, utcnow
from recap.models import ChatSession
from recap.ops.stats import collect_stats
from recap.settings import get_settings
from recap.worker.jobs.claim import NOOP_BACKOFF_MAX_S, noop_backoff_s
from recap.worker.jobs.sweeper import sweep
from tests.env import TEST_ENV
from tests.helpers import LOW, join_worker, runs, seed, session_row, wait_for

pytestmark = pytest.mark.usefixtures("celery_worker_thread")


@pytest.fixture(autouse=True)
def stuck_at_capacity(settings_env: Callable[..., None]) -> None:
    # Four long messages fill 80% of a 2000-token budget, and all four lie in the
    # keep window: the session is due on capacity, and nothing can be condensed.
    settings_env(**{**LOW, "RECAP_KEEP_RECENT": 6}, RECAP_CONTEXT_BUDGET_TOKENS=2000)


def sweep_and_settle() -> int:
    queued = sweep(get_settings())
    join_worker(TEST_ENV["RECAP_QUEUE"])
    return queued


def test_backoff_doubles_from_one_sweep_interval_up_to_a_day() -> None:
    assert [noop_backoff_s(n, base_s=300) for n in (1, 2, 3)] == [300, 600, 1200]
    assert noop_backoff_s(10_000, base_s=300) == NOOP_BACKOFF_MAX_S == 86_400


def test_an_uncondensable_session_is_queued_and_audited_once_per_backoff_period() -> None:
    seed("stuck", 4, words=500)
    assert sweep_and_settle() == 1
    wait_for(lambda: len(runs("stuck")) == 1, what="the first no-op run")
    first = runs("stuck")[0]
    assert first.status == "skipped"
    assert "nothing outside the keep window" in (first.reason or "")

    # Every later sweep in the back-off period leaves it alone: no job, no row.
    for _ in range(5):
        assert sweep_and_settle() == 0
    assert len(runs("stuck")) == 1
    row = session_row("stuck")
    assert row is not None and row.noop_runs == 1 and row.noop_backoff_until is not None
    left = row.noop_backoff_until - utcnow()
    assert timedelta(0) < left <= timedelta(seconds=get_settings().sweep_interval_s)
    with transaction() as s:  # recap stats and recap metrics count it
        stats = collect_stats(db=s, settings=get_settings(), now=utcnow())
    assert stats.sessions_backing_off == 1

    # The period over and nothing changed: one more run, and a period twice as long.
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "stuck")
                  .values(noop_backoff_until=utcnow() - timedelta(seconds=1)))
    assert sweep_and_settle() == 1
    assert sweep_and_settle() == 0
    assert len(runs("stuck")) == 2
    row = session_row("stuck")
    assert row is not None and row.noop_runs == 2 and row.noop_backoff_until is not None
    assert row.noop_backoff_until - utcnow() > timedelta(seconds=get_settings().sweep_interval_s)


def test_a_changed_context_ends_the_backoff() -> None:
    seed("grows", 4, words=500)
    assert sweep_and_settle() == 1
    assert sweep_and_settle() == 0
    add_message("grows", "user", "one more short line")
    assert sweep_and_settle() == 1  # judged again on what changed
    assert len(runs("grows")) == 2
    row = session_row("grows")
    assert row is not None and row.noop_runs == 1  # a new context starts a new count


def test_new_session_settings_end_the_backoff() -> None:
    from recap.sessions.overrides import configure_session

    seed("tuned", 4, words=500)
    assert sweep_and_settle() == 1
    assert sweep_and_settle() == 0
    configure_session("tuned", {"keep_recent": 2})  # judged again under its new settings
    assert sweep_and_settle() == 1
    assert len(runs("tuned")) == 2
