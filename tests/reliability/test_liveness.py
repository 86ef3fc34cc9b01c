"""Liveness with real worker processes: a Claude call that never finishes cannot hold
a job, its worker slot or its lease past the call's total deadline, in every pool
(Celery's soft time limit only exists in prefork children, and fires after minutes)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.helpers import assert_invariants, message_ids, runs, seed
from tests.reliability.conftest import RoutingFake
from tests.reliability.procs import WorkerProcess, publish, wait_for_runs

pytestmark = [pytest.mark.system, pytest.mark.usefixtures("low_settings")]


@pytest.mark.parametrize("pool", ["prefork", "threads", "solo"])
def test_a_trickling_server_fails_the_attempt_at_the_deadline_in_every_pool(
        pool: str, spawn: Callable[..., WorkerProcess], api: RoutingFake, queue: str) -> None:
    # A byte every 50 ms never lets a 1 s read time out; the answer would take
    # ~25 s, past the soft time limit (5 s), and on the threads and solo pools
    # nothing else would ever end it.
    spawn(pool=pool, concurrency=1, RECAP_LLM_TIMEOUT_S=1, RECAP_MAX_RETRIES=0)
    sid = f"trickle-{pool}"
    ids = seed(sid, 11)
    api.trickle(0.05)
    publish(sid, queue)

    statuses = wait_for_runs(sid, lambda s: bool(s), what="the attempt's run")
    assert statuses == ["dead"]  # no retries left: the final attempt dead-letters
    error = runs(sid)[0].error or ""
    assert "total deadline of 1s" in error, error
    assert "SoftTimeLimitExceeded" not in error
    assert api.trickles_finished == 0  # the server was still sending
    assert message_ids(sid) == ids  # a failed attempt changes nothing
    assert_invariants({sid: ids})
