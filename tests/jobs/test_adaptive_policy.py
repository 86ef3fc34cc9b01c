"""RECAP_POLICY through the hook and a real job: a short-turn chat that the fixed
rule leaves alone until capacity folds under the adaptive policy, down to its
low-water mark, with the reason in the run. A real in-process worker, Redis,
PostgreSQL and the local Messages API server."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recap.api.ingest import after_reply
from recap.core.planning.adaptive import lowest_high_water, sizing
from recap.db import transaction, utcnow
from recap.ops.outlook import session_outlook
from recap.settings import get_settings
from recap.testing import FakeAnthropic
from recap.worker.jobs.sweeper import find_due
from tests.helpers import FINAL, assert_invariants, runs, seed, session_of, statuses, wait_for_task

pytestmark = pytest.mark.usefixtures("celery_worker_thread")


def marks(sid: str) -> tuple[int, int, int]:
    """(context tokens, high-water mark, low-water mark) of the session now."""
    row = session_of(sid)
    s = sizing(message_count=row.message_count, active_tokens=row.active_tokens,
               summary_tokens=row.summary_tokens, budget=32000, keep_recent=10,
               memory_limit=2000, prices=get_settings().prices_of())
    return row.summary_tokens + row.active_tokens, s.high_water, s.low_water


def test_adaptive_folds_a_short_chat_the_fixed_rule_leaves_alone(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    sid = "adaptive-short"
    ids = seed(sid, 100)
    settings_env(RECAP_POLICY="threshold")
    assert not after_reply(sid)  # 100 short messages: far below every fixed trigger
    settings_env(RECAP_POLICY="adaptive")
    context, high, low = marks(sid)
    assert context > high
    assert after_reply(sid)
    wait_for_task(lambda: any(s in FINAL for s in statuses(sid)), timeout=30)
    first = runs(sid)[0]
    assert first.status == "applied"
    assert (first.reason or "").startswith("adaptive: about ")
    assert f"fold past {high} tokens down to {low}" in (first.reason or "")
    assert session_of(sid).active_tokens <= low
    assert not after_reply(sid)  # below its new high-water mark
    with transaction() as db:
        o = session_outlook(sid, db=db, settings=get_settings(), now=utcnow())
    assert o.state == "below-high-water" and o.trigger.startswith(
        "the context passing the high-water mark of ")
    assert_invariants({sid: ids})


def test_sweeper_finds_only_sessions_past_their_own_high_water_mark(
        settings_env: Callable[..., None]) -> None:
    settings_env(RECAP_POLICY="adaptive")
    seed("past", 100)
    seed("between", 50)
    seed("small", 6)
    context, high, _ = marks("between")
    assert lowest_high_water(32000) < context <= high  # the SQL lets it through; not due
    assert marks("past")[0] > marks("past")[1]
    with transaction() as db:
        assert find_due(get_settings(), db=db, now=utcnow(), limit=10) == ["past"]
