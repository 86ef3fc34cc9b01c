"""Worker crashes, shutdowns, duplicate deliveries and concurrent ingest, with real
worker processes, PostgreSQL and Redis. Every test ends with the invariant."""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections import Counter
from collections.abc import Callable

import pytest

from recap.api.ingest import add_message, after_reply
from recap.testing import Reply
from tests.helpers import (
    assert_invariants,
    runs,
    seed,
    sentence,
    session_row,
    statuses,
    wait_for,
)
from tests.reliability.conftest import RoutingFake
from tests.reliability.procs import (
    WorkerProcess,
    broker_backlog,
    busy,
    publish,
    publishing_to,
    settle,
    sweep_into,
    sweep_until,
    wait_for_runs,
)

LEASE_HELD = "lease held by another job"

pytestmark = [pytest.mark.system, pytest.mark.usefixtures("low_settings")]


@pytest.mark.parametrize("pool", ["threads", "prefork"])
def test_sigkill_while_waiting_on_the_api(
        api: RoutingFake, spawn: Callable[..., WorkerProcess], queue: str, pool: str) -> None:
    """threads: the whole worker dies; prefork: its pool processes die under a live parent."""
    written = {"crash": seed("crash", 11)}
    gate = api.hold()  # the call is in flight when the worker dies
    first = spawn(pool=pool)
    task_id = publish("crash", queue)
    gate.wait_entered()
    held = session_row("crash")
    assert held is not None and held.lease_token is not None
    if pool == "threads":
        first.kill()
    else:
        for pid in first.children():
            os.kill(pid, signal.SIGKILL)
    gate.release()  # its answer goes to a dead connection
    # The dead holder's lease is live until it expires: nobody may take the session.
    assert sweep_into(queue) == 0
    if pool == "threads":
        spawn(pool=pool)
    # The sweeper path: once the lease expires the session is due and queued again.
    sweep_until(queue, lambda: "applied" in statuses("crash"), timeout=60,
                what="the sweeper-driven apply")
    settle(queue)
    row = session_row("crash")
    assert row is not None and row.lost_leases == 0 and row.summary_version == 1
    assert Counter(statuses("crash"))["applied"] == 1
    if pool == "threads":
        # Redis redelivers the unacked original once it is older than the visibility
        # timeout (10s) and a consumer scans for it (a starting worker does; so does
        # broker_backlog(restore=True)). Usually the sweeper's job has applied by then
        # and the redelivery changes nothing; on a loaded machine the redelivery can
        # come first and apply, and then the sweeper's job changes nothing. Either way
        # exactly one run applies and every other run is a no-op.
        wait_for(lambda: broker_backlog(queue, restore=True) >= 0
                 and any(r.task_id == task_id for r in runs("crash")), timeout=60,
                 interval=0.5, what="the redelivered original message")
        settle(queue)
        (redelivered,) = [r for r in runs("crash") if r.task_id == task_id]
        assert redelivered.status in ("applied", "skipped"), redelivered.status
        noops = [r for r in runs("crash") if r.status != "applied"]
        assert all(
            r.status == "skipped" and ((r.reason or "").startswith("below thresholds")
                                       or r.reason == LEASE_HELD)
            for r in noops), [(r.status, r.reason) for r in noops]
    else:
        # reject_on_worker_lost requeued the original at once; it ran while the dead
        # child's lease was still live.
        requeued = [(r.status, r.reason) for r in runs("crash") if r.task_id == task_id]
        assert requeued == [("skipped", LEASE_HELD)]
    assert Counter(statuses("crash"))["applied"] == 1
    assert_invariants(written)


@pytest.mark.parametrize("reply", ["slow", "hang"])
def test_sigterm_mid_job_finishes_or_releases_it(
        api: RoutingFake, spawn: Callable[..., WorkerProcess], queue: str, reply) -> None:
    """Warm shutdown: a call that answers after the SIGTERM finishes and applies; a hung
    call times out, the lease is released with a failed run, and the retry runs on the
    next worker."""
    written = {"term": seed("term", 11)}
    if reply == "hang":
        api.script(Reply("hang"))
    gate = api.hold()
    worker = spawn(pool="prefork")
    publish("term", queue)
    gate.wait_entered()
    worker.warm_shutdown()  # while the call is held
    gate.release()
    assert worker.wait(60) == 0
    row = session_row("term")
    assert row is not None and row.lease_token is None  # finished or released, not held
    assert statuses("term") == (["applied"] if reply == "slow" else ["failed"])
    spawn(pool="prefork")
    settle(queue)
    assert Counter(statuses("term"))["applied"] == 1
    assert_invariants(written)


def test_ten_duplicate_deliveries_across_two_workers_apply_once(
        api: RoutingFake, spawn: Callable[..., WorkerProcess], queue: str) -> None:
    written = {"dup": seed("dup", 11)}
    gate = api.hold()  # the first claim's call keeps its lease held while the others arrive
    spawn()
    spawn()
    same = str(uuid.uuid4())
    # Five redeliveries of one message (same task id) and five separate jobs.
    for k in range(10):
        publish("dup", queue, **({"task_id": same} if k < 5 else {}))
    gate.wait_entered()
    wait_for_runs("dup", lambda s: s.count("skipped") == 9, what="nine skipped runs")
    gate.release()
    wait_for_runs("dup", lambda s: "applied" in s, what="the apply")
    settle(queue)
    found = runs("dup")
    assert Counter(r.status for r in found) == {"applied": 1, "skipped": 9}
    assert {r.reason for r in found if r.status == "skipped"} == {LEASE_HELD}
    assert_invariants(written)


def test_ingest_while_two_workers_apply(
        api: RoutingFake, spawn: Callable[..., WorkerProcess], queue: str) -> None:
    """A producer writes and calls the hook while summaries are applied concurrently."""
    sessions = [f"live-{k}" for k in range(3)]
    written: dict[str, list[int]] = {sid: [] for sid in sessions}
    api.delay = 0.1  # each call takes a while, so messages arrive during the calls
    spawn()
    spawn()
    failures: list[BaseException] = []

    def produce() -> None:
        try:
            for i in range(90):
                for sid in sessions:
                    role = "user" if i % 2 == 0 else "assistant"
                    written[sid].append(add_message(sid, role, sentence(i, 30)))
                    if role == "assistant":
                        after_reply(sid)
        except BaseException as exc:
            failures.append(exc)

    with publishing_to(queue):
        producer = threading.Thread(target=produce)
        producer.start()
        producer.join(timeout=240)
        assert not producer.is_alive() and failures == []
    settle(queue)
    for sid in sessions:
        row = session_row(sid)
        assert row is not None and row.summary_version >= 10, busy(queue)
        assert Counter(statuses(sid)).keys() <= {"applied", "skipped"}
        # A hook's job that met a running one, or a follow-up with nothing left to do.
        for run in runs(sid):
            if run.status == "skipped":
                assert run.reason == LEASE_HELD or (run.reason or "").startswith(
                    "below thresholds"), run.reason
    assert_invariants(written)
