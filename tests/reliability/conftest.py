"""Fixtures for crash and infrastructure-fault tests with real worker subprocesses.

Each test gets its own queue, so its worker processes are the only consumers
(an in-process worker started by another test module keeps the default queue).
Jobs go to that queue explicitly (``publish``) or through ``publishing_to``
(hook, sweeper, ``recap retry``). Workers use low thresholds and a short lease.
"""

from __future__ import annotations

import io
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pytest
from sqlalchemy import func, select

from bench.soak import WorkerProcess, broker_backlog, publishing_to
from tests.fake_anthropic import FakeAnthropic, Reply
from tests.helpers import wait_for

# Low thresholds: 11 messages of ~40 words make exactly one batch of 5 (6 stay).
# Short limits: lease 8s > hard limit 6s; visibility 10s > 6s + backoff cap 1s.
LOW: dict[str, object] = {
    "RECAP_TRIGGER_MESSAGES": 10, "RECAP_TRIGGER_TOKENS": 100, "RECAP_BATCH_SIZE": 5,
    "RECAP_KEEP_RECENT": 4, "RECAP_MAX_RETRIES": 3, "RECAP_RETRY_BACKOFF_S": 0.1,
    "RECAP_RETRY_BACKOFF_MAX_S": 1, "RECAP_LLM_TIMEOUT_S": 4,
    "RECAP_TASK_SOFT_TIME_LIMIT_S": 5, "RECAP_TASK_TIME_LIMIT_S": 6, "RECAP_LEASE_S": 8,
    "RECAP_VISIBILITY_TIMEOUT_S": 10, "RECAP_SUMMARIZER": "claude",
}


class RoutingFake(FakeAnthropic):
    """The fake Messages API, plus fixed replies for requests whose body holds a marker.

    ``routes[marker] = reply`` answers every request mentioning ``marker`` (for
    example a poison session's text) with ``reply``; others follow the script.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self.routes: dict[str, Reply] = {}
        super().__init__()
        # Killed workers reset their connections on purpose; keep stderr quiet.
        self._server.handle_error = lambda *_: None  # type: ignore[method-assign]

    def _handler(self) -> Any:
        base: Any = super()._handler()
        fake = self

        class Handler(base):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:  # noqa: N802
                me: Any = self
                raw = me.rfile.read(int(me.headers.get("content-length", 0)))
                fake._local.body = raw
                keep, me.rfile = me.rfile, io.BytesIO(raw)
                try:
                    super().do_POST()
                finally:
                    me.rfile = keep  # the next request on this keep-alive connection

        return Handler

    def _next(self) -> Reply:
        body = getattr(self._local, "body", b"")
        with self._lock:
            routes = list(self.routes.items())
        for marker, reply in routes:
            if marker.encode() in body:
                return reply
        return super()._next()

    def reset(self) -> None:
        super().reset()
        with self._lock:
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
    """LOW for the test process (hook, sweeper) and the workers it spawns, and a fresh
    routing fake. Not autouse: other modules in this directory keep the defaults."""
    settings_env(**LOW)
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


def publish(session_id: str, queue: str, **options: Any) -> str:
    """Send one summarize job for ``session_id`` to ``queue``; returns its task id."""
    from worker.tasks import summarize_session

    return str(summarize_session.apply_async((session_id,), queue=queue, **options).id)


def sweep_into(queue: str) -> int:
    """Run the real sweeper once, publishing to ``queue``; returns how many it queued."""
    from worker.jobs.sweeper import sweep
    from worker.settings import get_settings

    with publishing_to(queue):
        return sweep(get_settings())


def busy(queue: str) -> list[str]:
    """Why the system is not idle yet (empty when idle): leases, pending, due, queued."""
    from models import ChatSession
    from worker.db import transaction, utcnow
    from worker.jobs.sweeper import due_query
    from worker.settings import get_settings

    now = utcnow()
    with transaction() as s:
        leased = s.scalar(select(func.count()).where(ChatSession.lease_token.isnot(None)))
        pending = s.scalar(select(func.count()).where(ChatSession.enqueued_at.isnot(None)))
        due = s.scalar(select(func.count()).select_from(
            due_query(get_settings(), now=now, limit=None).subquery()))
    queued = broker_backlog(queue, unacked=False)
    return [f"{n} {what}" for n, what in ((leased, "leased"), (pending, "pending"),
                                          (due, "due"), (queued, "queued")) if n]


def settle(queue: str, *, timeout: float = 90.0) -> None:
    """Sweep into ``queue`` until nothing is leased, pending, due or queued."""
    def idle() -> bool:
        sweep_into(queue)
        return not busy(queue)

    wait_for(idle, timeout=timeout, interval=0.5, what=f"idle workers ({busy(queue)})")


def assert_invariant(written: Mapping[str, Iterable[int]]) -> None:
    from worker.checks import check_invariants
    from worker.db import transaction

    with transaction() as s:
        problems = check_invariants(s, written=written, idle=True)
    assert problems == []


def wait_for_runs(session_id: str, predicate: Callable[[list[str]], bool], *,
                  timeout: float = 60.0, what: str = "runs") -> list[str]:
    from tests.helpers import statuses

    wait_for(lambda: predicate(statuses(session_id)), timeout=timeout, what=what)
    return statuses(session_id)
