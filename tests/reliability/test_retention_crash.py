"""The retention guard under a worker crash: a worker killed while its repair call
is in flight changes nothing; the next worker's apply keeps every specific."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from recap.api.ingest import add_message
from recap.db import transaction
from recap.testing import Reply, Request, ok, recap_kind
from tests.checks import check_invariants
from tests.helpers import session_of, session_row, statuses
from tests.jobs.test_scenarios import conversation
from tests.reliability.conftest import RoutingFake
from tests.reliability.procs import WorkerProcess, publish, settle, sweep_until

pytestmark = [pytest.mark.system, pytest.mark.usefixtures("low_settings")]


def test_sigkill_during_the_repair_call_loses_nothing(
        api: RoutingFake, spawn: Callable[..., WorkerProcess], queue: str,
        settings_env: Callable[..., None]) -> None:
    settings_env(RECAP_RETENTION_GUARD="true")
    api.lose_specifics(0.7, seed=9)
    texts = {add_message("guard-crash", role, text): text
             for role, text in conversation(12)}
    reached = threading.Event()

    @api.route
    def slow_repair(request: Request) -> Reply | None:
        if recap_kind(request.body) != "repair" or reached.is_set():
            return None  # a later repair call (the next worker's) is answered at once
        reached.set()
        return ok(delay=60)  # the first repair call is answered after the kill

    first = spawn(RECAP_RETENTION_GUARD="true")
    publish("guard-crash", queue)
    assert reached.wait(30), "no repair call reached the fake API"
    first.kill()  # mid-job: the repair call is in flight, the apply has not run
    assert statuses("guard-crash") == []
    assert session_of("guard-crash").lease_token is not None
    spawn(RECAP_RETENTION_GUARD="true")
    sweep_until(queue, lambda: "applied" in statuses("guard-crash"), timeout=60,
                what="the apply after the crash")
    settle(queue)
    row = session_row("guard-crash")
    assert row is not None and row.summary_version == statuses("guard-crash").count("applied")
    with transaction() as s:
        assert check_invariants(s, written={"guard-crash": list(texts)},
                                written_texts={"guard-crash": texts}) == []
