"""Leases are taken and judged on the database's clock, not each worker's: a worker
whose clock runs a day ahead (or behind) neither takes a live lease nor writes one
that others see as expired, and the sweeper does not queue a leased session."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest

import recap.db
from recap.db import transaction
from recap.settings import get_settings
from recap.store.fence import release
from recap.worker.jobs.claim import Claim, claim_session
from recap.worker.jobs.outcome import Job, Outcome
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.sweeper import find_due
from tests.helpers import LOW, seed, session_row

DAY = timedelta(days=1)


def skew_clock(monkeypatch: pytest.MonkeyPatch, by: timedelta) -> None:
    """This process's clock (every Recap module's ``utcnow``) runs ``by`` off."""
    real = recap.db.utcnow

    def skewed() -> datetime:
        return real() + by

    for name, module in list(sys.modules.items()):
        if name.split(".")[0] == "recap" and getattr(module, "utcnow", None) is real:
            monkeypatch.setattr(module, "utcnow", skewed)


def claim(sid: str, task: str) -> Claim | Outcome:
    return claim_session(sid, job=Job(task_id=task), res=get_resources())


@pytest.fixture(autouse=True)
def low(settings_env: Callable[..., None]) -> None:
    settings_env(**LOW)


@pytest.mark.parametrize("skewed", ["second", "first"])
def test_a_skewed_worker_clock_never_gives_two_workers_one_lease(
        monkeypatch: pytest.MonkeyPatch, skewed: str) -> None:
    sid = f"clock-{skewed}"
    seed(sid, 11)
    # "second": the taker's clock is a day ahead, so the holder's lease looks expired
    # to it; "first": the holder's clock is a day behind, so it writes a lease that
    # every other worker sees as long expired.
    if skewed == "first":
        skew_clock(monkeypatch, -DAY)
    first = claim(sid, "holder")
    assert isinstance(first, Claim)
    monkeypatch.undo()
    if skewed == "second":
        skew_clock(monkeypatch, DAY)

    second = claim(sid, "taker")
    assert isinstance(second, Outcome)
    assert (second.status, second.reason) == ("skipped", "lease held by another job")
    with transaction() as s:
        # The sweeper sees the lease as live too: it queues nothing.
        assert sid not in find_due(get_settings(), db=s, now=recap.db.db_now(s), limit=10)
        release(sid, db=s, token=first.token)


def test_the_lease_expires_on_the_databases_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker a day behind still writes a lease of RECAP_LEASE_S from the database's now.
    seed("clock-expiry", 11)
    skew_clock(monkeypatch, -DAY)
    held = claim("clock-expiry", "holder")
    assert isinstance(held, Claim)
    with transaction() as s:
        now = recap.db.db_now(s)
        from recap.models import ChatSession

        row = s.get(ChatSession, "clock-expiry")
        assert row is not None and row.lease_expires_at is not None
        left = row.lease_expires_at - now
        assert timedelta(0) < left <= timedelta(seconds=get_settings().lease_s)
        release("clock-expiry", db=s, token=held.token)


@pytest.mark.parametrize("by", [DAY, -DAY])
def test_the_hook_writes_its_pending_marker_on_the_databases_clock(
        monkeypatch: pytest.MonkeyPatch, by: timedelta) -> None:
    # A chat app whose clock is a day off: its marker must neither look fresh for a
    # day (ahead: a lost job would wait that long for the sweeper) nor stale at once.
    from recap.api.ingest import after_reply

    seed("clock-hook", 11)
    skew_clock(monkeypatch, by)
    assert after_reply("clock-hook") is True
    monkeypatch.undo()
    row = session_row("clock-hook")
    assert row is not None and row.enqueued_at is not None
    with transaction() as s:
        assert abs(row.enqueued_at - recap.db.db_now(s)) < timedelta(hours=1)
