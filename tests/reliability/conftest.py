"""Fixtures for crash and infrastructure-fault tests with real worker subprocesses.

Each test gets its own queue, so its worker processes are the only consumers
(an in-process worker started by another test module keeps the default queue).
Jobs go to that queue explicitly (``procs.publish``) or through
``procs.publishing_to`` (hook, sweeper, ``recap retry``). Workers use low
thresholds and a short lease. The helpers the tests call live in
tests/reliability/procs.py; this module only holds fixtures.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from recap.testing import FakeAnthropic, Reply, Request
from tests.helpers import LOW
from tests.reliability.procs import WorkerProcess

# Low thresholds (11 messages of ~40 words make exactly one batch of 5; 6 stay) and
# short limits: lease 8s > hard limit 6s; visibility 10s > 6s + backoff cap 1s.
WORKERS: dict[str, object] = {
    **LOW, "RECAP_MAX_RETRIES": 3, "RECAP_RETRY_BACKOFF_S": 0.1, "RECAP_RETRY_BACKOFF_MAX_S": 1,
    "RECAP_LLM_TIMEOUT_S": 4, "RECAP_TASK_SOFT_TIME_LIMIT_S": 5, "RECAP_TASK_TIME_LIMIT_S": 6,
    "RECAP_LEASE_S": 8, "RECAP_VISIBILITY_TIMEOUT_S": 10, "RECAP_SUMMARIZER": "claude",
}


class RoutingFake(FakeAnthropic):
    """The fake Messages API, plus fixed replies for requests whose body holds a marker.

    ``routes[marker] = reply`` answers every request mentioning ``marker`` (for
    example a poison session's text) with ``reply``; others follow the script.
    """

    def __init__(self) -> None:
        self.routes: dict[str, Reply] = {}
        # Killed workers reset their connections on purpose; keep stderr quiet.
        super().__init__(routes=[self._by_marker], log_errors=False)

    def _by_marker(self, request: Request) -> Reply | None:
        for marker, reply in list(self.routes.items()):
            if request.mentions(marker):
                return reply
        return None

    def reset(self) -> None:
        super().reset()
        self.routes.clear()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    setattr(item, "rep_" + report.when, report)  # worker logs are printed on failure
    return report


@pytest.fixture(scope="session")
def api() -> Iterator[RoutingFake]:
    server = RoutingFake()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def low_settings(settings_env: Callable[..., None], api: RoutingFake) -> Iterator[None]:
    """WORKERS for the test process (hook, sweeper) and the workers it spawns, and a fresh
    routing fake. Not autouse: other modules in this directory keep the defaults."""
    settings_env(**WORKERS)
    api.reset()
    yield
    api.reset()


@pytest.fixture
def queue() -> str:
    return f"recap-rel-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def spawn(low_settings: None, queue: str, api: RoutingFake, tmp_path: Any,
          request: pytest.FixtureRequest) -> Iterator[Callable[..., WorkerProcess]]:
    """``spawn(pool="threads", concurrency=2, start=True, **env)``: a worker subprocess on
    this test's queue and the routing fake; killed and reaped at teardown."""
    made: list[WorkerProcess] = []

    def make(*, pool: str = "threads", concurrency: int = 2, start: bool = True,
             **env: object) -> WorkerProcess:
        worker = WorkerProcess(f"w{len(made)}", queue=queue, log_dir=tmp_path, pool=pool,
                               concurrency=concurrency,
                               env={**os.environ, "ANTHROPIC_BASE_URL": api.url,
                                    **{k: str(v) for k, v in env.items()}})
        made.append(worker)
        return worker.start() if start else worker

    yield make
    report = getattr(request.node, "rep_call", None)
    for worker in made:
        worker.close()
        if report is None or report.failed:
            print(f"--- {worker.label} (start {worker.starts}) log ---\n{worker.tail()}")

