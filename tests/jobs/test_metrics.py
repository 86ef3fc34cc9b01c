"""recap.ops.metrics: the figures ``recap metrics`` exposes, against seeded rows.

Reason texts come from the code that writes them (recap.core.planning.policy's plans,
claim_session's skips and dead-letters), so a reworded reason that falls out of
its class fails here.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, select, update

from recap import db as dbmod
from recap.core.planning import policy
from recap.core.planning.policy import MessageInfo
from recap.core.planning.prices import (
    DEFAULT_REPLY_MODEL,
    DEFAULT_SUMMARIZER_MODEL,
    prices_for,
)
from recap.db import transaction, utcnow
from recap.models import ChatSession, Heartbeat, SummaryRun
from recap.ops import metrics
from recap.ops.reasons import reason_class
from recap.settings import get_settings
from recap.worker.jobs.claim import Claim, claim_session, record_rejected
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.sweeper import SWEEP_HEARTBEAT, sweep
from tests.env import migrate

JOB = Job(task_id="t-metrics")


def _reset_heartbeats() -> None:
    # conftest's TRUNCATE predates the heartbeats table.
    with transaction() as s:
        s.execute(delete(Heartbeat))


def snapshot(now: datetime | None = None) -> metrics.Snapshot:
    with transaction() as s:
        return metrics.snapshot(db=s, settings=get_settings(), now=now or utcnow())


def add_session(sid: str, **values: Any) -> None:
    with transaction() as s:
        s.add(ChatSession(id=sid, **values))


def add_run(sid: str, status: str, reason: str | None, **values: Any) -> None:
    with transaction() as s:
        s.add(SummaryRun(session_id=sid, status=status, reason=reason, **values))


def plan_reason(*, n: int, tokens: int, summary_tokens: int = 0, budget: int = 32000) -> str:
    """The reason a real plan gives for ``n`` messages of ``tokens`` each."""
    t = policy.Thresholds(trigger_messages=30, trigger_tokens=15000, batch_size=20,
                          keep_recent=10, context_budget_tokens=budget)
    msgs = [MessageInfo(i, "user" if i % 2 else "assistant", tokens) for i in range(1, n + 1)]
    return policy.plan(msgs, summary_tokens=summary_tokens, t=t).reason


def totals() -> dict[tuple[str, str], metrics.RunTotal]:
    return {(r.status, r.reason): r for r in snapshot().runs}


def test_runs_are_counted_by_status_and_reason_class() -> None:
    normal = plan_reason(n=31, tokens=760)
    capacity = plan_reason(n=40, tokens=700)
    aggressive = plan_reason(n=40, tokens=800)
    below = plan_reason(n=12, tokens=10)
    nothing = plan_reason(n=5, tokens=7000)  # aggressive, but all in the keep window
    assert (normal.split(":")[0], capacity.split(":")[0], aggressive.split(":")[0],
            below.split(":")[0]) == ("normal", "capacity", "aggressive", "below thresholds")
    assert nothing.endswith("nothing outside the keep window can be condensed")
    add_run("a", "applied", normal, messages_condensed=20, input_tokens=1000,
            output_tokens=100)
    add_run("a", "applied", f"{normal}; clipped to the job budget", messages_condensed=15,
            input_tokens=900, output_tokens=90)
    add_run("b", "applied", capacity, messages_condensed=7, input_tokens=500, output_tokens=50)
    add_run("c", "failed", aggressive, input_tokens=300, output_tokens=0)
    add_run("c", "dead", aggressive)
    add_run("d", "skipped", below)
    add_run("d", "skipped", nothing)
    add_run("e", "superseded", "the lease or summary version changed during the call",
            input_tokens=40, output_tokens=4)
    add_run("e", "superseded", "3 of the 20 batch messages were already gone")
    add_run("f", "applied", "resummarized from 12 archived messages", input_tokens=60,
            output_tokens=6)
    add_run("g", "failed", None)
    add_run("g", "failed", "something nobody classified")

    # Real skips and dead-letters, written by claim_session itself.
    settings = get_settings()
    assert not isinstance(claim_session("ghost", job=JOB, res=get_resources()), Claim)
    record_rejected("bad id\n", "control characters", job=JOB)
    add_session("held", message_count=40, active_tokens=20000, lease_token="other",
                lease_expires_at=utcnow() + timedelta(seconds=60))
    add_session("lost", message_count=40, active_tokens=20000,
                lost_leases=settings.max_lost_leases, lease_token="x",
                lease_expires_at=utcnow() - timedelta(seconds=1))
    add_session("tuned", message_count=40, active_tokens=20000,
                overrides={"batch_size": -1})
    for sid in ("held", "lost", "tuned"):
        assert not isinstance(claim_session(sid, job=JOB, res=get_resources()), Claim)

    got = {key: r.runs for key, r in totals().items()}
    assert got == {
        ("applied", "normal"): 2, ("applied", "capacity"): 1, ("applied", "resummarize"): 1,
        ("failed", "aggressive"): 1, ("dead", "aggressive"): 1, ("failed", "other"): 2,
        ("skipped", "below-thresholds"): 1, ("skipped", "nothing-to-condense"): 1,
        ("superseded", "lease-or-version-changed"): 1, ("superseded", "batch-gone"): 1,
        ("skipped", "not-found"): 1, ("skipped", "rejected-id"): 1,
        ("skipped", "lease-held"): 1, ("dead", "lost-leases"): 1,
        ("dead", "invalid-overrides"): 1,
    }
    snap = snapshot()
    assert snap.messages_condensed == 42  # applied runs only
    # Every run's usage counts, failed and superseded ones included.
    assert (snap.input_tokens, snap.output_tokens) == (2800, 250)
    normal_total = totals()[("applied", "normal")]
    assert (normal_total.messages_condensed, normal_total.input_tokens,
            normal_total.output_tokens) == (35, 1900, 190)


def test_session_figures(settings_env: Callable[..., None]) -> None:
    settings_env(RECAP_POLICY="threshold", RECAP_TRIGGER_MESSAGES=30, RECAP_TRIGGER_TOKENS=15000,
                 RECAP_CONTEXT_BUDGET_TOKENS=32000, RECAP_ENQUEUE_STALE_S=900)
    now = utcnow()
    ago = lambda s: now - timedelta(seconds=s)  # noqa: E731
    hot = {"message_count": 40, "active_tokens": 20000}  # due by the normal rule
    add_session("due-normal", **hot, updated_at=ago(600))
    add_session("due-capacity", message_count=5, summary_tokens=1000, active_tokens=25000,
                updated_at=ago(100))
    add_session("due-stale-marker", **hot, enqueued_at=ago(1000), updated_at=ago(50))
    add_session("due-expired-lease", **hot, lease_token="gone",
                lease_expires_at=ago(1), updated_at=ago(40))
    add_session("pending", **hot, enqueued_at=ago(30), updated_at=ago(9000))
    add_session("pending-2", message_count=3, active_tokens=10, enqueued_at=ago(5))
    add_session("leased", **hot, lease_token="live", lease_expires_at=ago(-60),
                updated_at=ago(9000))
    add_session("dead", **hot, blocked_until=ago(-3600), updated_at=ago(9000))
    add_session("over-budget", message_count=50, summary_tokens=2000, active_tokens=31000,
                needs_escalation=True, lease_token="live", lease_expires_at=ago(-60))
    add_session("idle", message_count=3, active_tokens=100, updated_at=ago(99999))
    add_session("blocked-normal", **hot, normal_blocked=True,
                normal_blocked_under=get_settings().thresholds_key(), updated_at=ago(99999))
    # Sessions with their own settings: judged by them, not the global ones.
    small = {"trigger_messages": 12, "trigger_tokens": 100, "keep_recent": 4}
    add_session("tuned-due", message_count=15, active_tokens=500, overrides=small,
                updated_at=ago(5000))
    add_session("tuned-not-due", message_count=15, active_tokens=50, overrides=small,
                updated_at=ago(99999))
    add_session("tuned-over", message_count=15, active_tokens=2500,
                overrides={"context_budget_tokens": 2000}, lease_token="live",
                lease_expires_at=ago(-60), updated_at=ago(99999))

    snap = snapshot(now)
    assert snap.sessions == 14
    assert snap.due == 5  # due-normal, due-capacity, due-stale-marker, due-expired-lease, tuned-due
    assert snap.pending == 2
    assert snap.leased == 2 + 1
    assert snap.dead == 1
    assert snap.over_budget == 2  # over-budget (33000 > 32000), tuned-over (2500 > 2000)
    assert snap.escalated == 1
    assert snap.age_s(snap.oldest_due_at) == 5000  # tuned-due, the oldest due
    assert snap.age_s(snap.oldest_pending_at) == 30
    assert snap.active_messages == 40 * 7 + 5 + 3 + 50 + 3 + 15 * 3
    assert snap.summary_tokens == 3000

    # Without the override session, the oldest due one is a global-threshold one.
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "tuned-due")
                  .values(lease_token="live", lease_expires_at=ago(-60), updated_at=ago(5000)))
    snap = snapshot(now)
    assert snap.due == 4 and snap.age_s(snap.oldest_due_at) == 600


def test_nothing_due_nothing_pending_reads_as_zero_age() -> None:
    add_session("idle", message_count=3, active_tokens=100)
    snap = snapshot()
    assert (snap.due, snap.pending, snap.oldest_due_at, snap.oldest_pending_at) == (
        0, 0, None, None)
    assert snap.age_s(snap.oldest_due_at) == 0 and snap.runs == []


def test_last_sweep_is_recorded_by_the_sweeper() -> None:
    _reset_heartbeats()
    assert snapshot().last_sweep_at is None
    before = utcnow()
    assert sweep(get_settings()) == 0  # nothing due: nothing is published
    after = utcnow()
    first = snapshot().last_sweep_at
    assert first is not None and before <= first <= after
    sweep(get_settings())
    with transaction() as s:
        assert s.scalar(select(Heartbeat.at).where(Heartbeat.name == SWEEP_HEARTBEAT)) \
            == snapshot().last_sweep_at
    last = snapshot().last_sweep_at
    assert last is not None and last > first


@contextmanager
def on_sqlite(tmp_path: Path, settings_env: Callable[..., None]) -> Iterator[datetime]:
    """A migrated SQLite database holding a due session and a tuned one (under the
    fixed rule, whose thresholds make them due); yields now."""
    url = f"sqlite:///{tmp_path / 'recap.sqlite3'}"
    migrate(url)
    dbmod.reset_engines()
    try:
        # Jobs the sweep queues go to a queue of their own: an in-process worker that
        # earlier tests started must not run them against this database meanwhile.
        settings_env(DATABASE_URL=url, RECAP_POLICY="threshold",
                     RECAP_QUEUE=f"recap-test-sqlite-{uuid.uuid4().hex[:8]}")
        now = utcnow()
        add_session("due", message_count=40, active_tokens=20000,
                    updated_at=now - timedelta(seconds=120))
        add_session("tuned", message_count=15, active_tokens=500,
                    overrides={"trigger_messages": 12, "trigger_tokens": 100, "keep_recent": 4},
                    updated_at=now - timedelta(seconds=300))
        yield now
    finally:
        dbmod.reset_engines()


def test_snapshot_on_sqlite(tmp_path: Path, settings_env: Callable[..., None]) -> None:
    with on_sqlite(tmp_path, settings_env) as now:
        add_session("pending", message_count=3, active_tokens=10,
                    enqueued_at=now - timedelta(seconds=7))
        add_run("due", "applied", plan_reason(n=31, tokens=760), messages_condensed=20,
                input_tokens=10, output_tokens=2)
        sweep(get_settings())
        snap = snapshot(now)
        assert [(r.status, r.reason, r.runs) for r in snap.runs] == [("applied", "normal", 1)]
        assert (snap.sessions, snap.due, snap.pending) == (3, 0, 3)  # the sweep queued both
        assert snap.age_s(snap.oldest_pending_at) == 7
        assert snap.last_sweep_at is not None and snap.last_sweep_at.tzinfo is not None


@pytest.mark.unit
def test_snapshot_on_sqlite_before_a_sweep(tmp_path: Path,
                                            settings_env: Callable[..., None]) -> None:
    with on_sqlite(tmp_path, settings_env) as now:
        snap = snapshot(now)
        assert (snap.due, snap.age_s(snap.oldest_due_at), snap.last_sweep_at) == (2, 300, None)


@pytest.mark.parametrize("reason, expected", [
    ("normal: 40 messages > 30 and batch 16000 tokens > 15000", "normal"),
    ("lease held by another job", "lease-held"),
    ("below the high-water mark: about 4040 tokens a reply (24 messages, 48480 tokens); "
     "keep 1 verbatim, memories 500: fold past 17904 tokens down to 1620; past it, the "
     "cached prefix is cheaper to keep (over 12 replies: fold call 58176 + write 2650 vs "
     "45000 saved); context 48480 tokens", "prefix-cheaper"),
    ("session 'x' not found", "not-found"),
    (None, "other"),
])
def test_reason_class_sql(reason: str | None, expected: str) -> None:
    add_run("r", "skipped", reason)
    with transaction() as s:
        assert s.scalar(select(reason_class())) == expected


def test_an_adaptive_plan_is_labelled_with_the_mode_its_run_recorded() -> None:
    # The adaptive policy's reasons start "adaptive: ..."; summary_runs records the
    # rule (mode), and the metric says the same, never "other".
    t = policy.Thresholds(trigger_messages=30, trigger_tokens=15000, batch_size=20,
                          keep_recent=1, context_budget_tokens=32000, adaptive=True,
                          prices=prices_for(DEFAULT_REPLY_MODEL, DEFAULT_SUMMARIZER_MODEL))
    # Twenty replies: enough left, by the policy's estimate, for the fold to pay for
    # its call (at the default summarizer's prices) and the cache write
    # (recap.core.planning.pricing).
    msgs = [MessageInfo(i + 1, "user" if i % 2 == 0 else "assistant", 250, False)
            for i in range(40)]
    plan = policy.plan(msgs, summary_tokens=0, t=t)
    assert plan.reason.startswith("adaptive: ") and plan.mode == "normal", plan.reason
    add_run("adapt", "applied", plan.reason, mode=str(plan.mode), messages_condensed=20)
    add_run("adapt", "failed", plan.reason, mode=str(plan.mode))
    add_run("adapt", "applied", "something else", mode="none")
    assert {key: r.runs for key, r in totals().items()} == {
        ("applied", "normal"): 1, ("failed", "normal"): 1, ("applied", "other"): 1}


def counts(runs: list[metrics.RunTotal]) -> dict[tuple[str, str], int]:
    return {(r.status, r.reason): r.runs for r in runs}


def read(ledger: metrics.RunLedger) -> dict[tuple[str, str], int]:
    with transaction() as s:
        return counts(ledger.read(db=s, now=utcnow()))


def test_the_ledger_reads_settled_runs_once_and_recent_ones_every_time() -> None:
    old = utcnow() - timedelta(hours=2)  # settled: older than 2 x SETTLE_S
    normal = plan_reason(n=31, tokens=760)
    add_run("a", "applied", normal, messages_condensed=20, created_at=old)
    add_run("a", "applied", normal, messages_condensed=20, created_at=old)
    add_run("b", "skipped", "lease held by another job")
    ledger = metrics.RunLedger()
    assert read(ledger) == {("applied", "normal"): 2, ("skipped", "lease-held"): 1}
    with transaction() as s:
        old_ids = list(s.scalars(select(SummaryRun.id).where(SummaryRun.session_id == "a")))
    assert ledger.watermark == max(old_ids)  # the recent run stays above it

    # Settled rows are not read again: deleted, they still count in this ledger
    # (summary_runs is append-only), while a fresh ledger reads what is there now.
    with transaction() as s:
        s.execute(delete(SummaryRun).where(SummaryRun.id.in_(old_ids)))
    add_run("c", "failed", normal)
    assert read(ledger) == {("applied", "normal"): 2, ("skipped", "lease-held"): 1,
                            ("failed", "normal"): 1}
    assert read(metrics.RunLedger()) == {("skipped", "lease-held"): 1, ("failed", "normal"): 1}

    # A run that shows up late with an old timestamp (a long transaction) counts
    # once, however many reads settle around it.
    add_run("d", "dead", normal, created_at=old)
    for _ in range(3):
        assert read(ledger)[("dead", "normal")] == 1
    assert read(ledger)[("applied", "normal")] == 2

