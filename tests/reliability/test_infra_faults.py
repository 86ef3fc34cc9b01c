"""Infrastructure faults with real worker processes: Redis down during ingest and
mid-job, PostgreSQL connections killed mid-job, and a poison session."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from recap.api.ingest import add_message, after_reply
from recap.db import session_factory, transaction
from recap.testing import error
from recap.worker.celery_app import app
from tests.helpers import (
    assert_invariants,
    message_ids,
    runs,
    seed,
    sentence,
    session_row,
    statuses,
    wait_for,
)
from tests.reliability.conftest import RoutingFake
from tests.reliability.procs import (
    PrivateRedis,
    WorkerProcess,
    publish,
    publishing_to,
    settle,
    sweep_into,
    wait_for_runs,
)

pytestmark = [pytest.mark.system, pytest.mark.usefixtures("low_settings")]


def _drop_broker_connections() -> None:
    # The app caches its connection and producer pools; forget them so the next
    # publish connects to the broker URL now in the environment.
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def broker_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Lets a test point this process's Celery at another broker; restored after."""
    yield monkeypatch
    monkeypatch.undo()
    _drop_broker_connections()


def test_redis_down_during_ingest(
        api: RoutingFake, spawn: Callable[..., WorkerProcess], queue: str,
        broker_url: pytest.MonkeyPatch) -> None:
    spawn()
    broker_url.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:1/0")  # nothing listens there
    _drop_broker_connections()
    written: list[int] = []
    with publishing_to(queue):
        for i in range(16):
            written.append(add_message("outage", "user" if i % 2 == 0 else "assistant",
                                       sentence(i, 40)))
            if i % 2:
                assert after_reply("outage") is False  # logged, never raised
    row = session_row("outage")
    assert row is not None and row.enqueued_at is None  # so the sweeper may queue it
    assert message_ids("outage") == written
    broker_url.undo()
    _drop_broker_connections()
    # Once the broker is back (and the hook's publishing pause is over), the sweeper
    # queues the session: exactly once.
    wait_for(lambda: sweep_into(queue), timeout=30, interval=0.5,
             what="the sweeper to queue the session")
    wait_for_runs("outage", lambda s: "applied" in s, what="the apply")
    settle(queue)
    assert statuses("outage") == ["applied", "applied"]  # 16 messages: a follow-up too
    assert message_ids("outage") == written[10:]
    assert_invariants({"outage": written})


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path / "redis.log")
    server.start()
    yield server
    server.kill()


def _kill_redis_mid_job(
        api: RoutingFake, spawn: Callable[..., WorkerProcess], queue: str,
        broker_url: pytest.MonkeyPatch, private_redis: PrivateRedis):
    """Kill the broker while a job waits on the API, then bring it back (empty) on its
    port. Returns the worker once it has either reconnected or exited."""
    broker_url.setenv("CELERY_BROKER_URL", private_redis.url)
    _drop_broker_connections()
    worker = spawn()  # inherits the private broker from the environment
    gate = api.hold()
    publish("mid", queue)
    gate.wait_entered()
    private_redis.kill()  # the broker, and the unacked message with it, are gone
    gate.release()
    # The database is the source of truth: the job applies without its broker.
    wait_for_runs("mid", lambda s: "applied" in s, what="the apply during the outage")
    private_redis.start()  # same port, empty
    _drop_broker_connections()
    assert worker.wait_logged("Connected to redis", times=2, timeout=90) or not worker.alive, \
        "the worker neither reconnected nor exited"
    return worker


def test_redis_killed_mid_job_loses_nothing(
        api: RoutingFake, spawn: Callable[..., WorkerProcess], queue: str,
        broker_url: pytest.MonkeyPatch, private_redis: PrivateRedis) -> None:
    written = {"mid": seed("mid", 11), "after": seed("after", 11)}
    worker = _kill_redis_mid_job(api, spawn, queue, broker_url, private_redis)
    if not worker.alive:
        worker.start()  # what the process supervisor does (see the xfail below)
    publish("after", queue)
    wait_for_runs("after", lambda s: "applied" in s, what="a job after the broker came back")
    settle(queue)
    assert statuses("mid") == ["applied"]
    assert_invariants(written)


def test_worker_process_survives_redis_restart_mid_job(
        api: RoutingFake, spawn: Callable[..., WorkerProcess], queue: str,
        broker_url: pytest.MonkeyPatch, private_redis: PrivateRedis) -> None:
    seed("mid", 11)
    seed("after", 11)
    worker = _kill_redis_mid_job(api, spawn, queue, broker_url, private_redis)
    assert worker.alive
    publish("after", queue)
    wait_for_runs("after", lambda s: "applied" in s, what="a job after the broker came back")


def test_idle_worker_reconnects_after_redis_restart(
        api: RoutingFake, spawn: Callable[..., WorkerProcess], queue: str,
        broker_url: pytest.MonkeyPatch, private_redis: PrivateRedis) -> None:
    written = {"later": seed("later", 11)}
    broker_url.setenv("CELERY_BROKER_URL", private_redis.url)
    _drop_broker_connections()
    worker = spawn()
    private_redis.kill()
    private_redis.start()
    _drop_broker_connections()
    assert worker.wait_logged("Connected to redis", times=2, timeout=90), \
        "the worker did not reconnect"
    publish("later", queue)
    wait_for_runs("later", lambda s: "applied" in s, what="a job after the broker came back")
    assert worker.alive
    settle(queue)
    assert_invariants(written)


_OTHERS = ("SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
           "WHERE datname = current_database() AND pid <> pg_backend_pid()")
# Backends waiting on a row lock inside the apply's first statement.
_BLOCKED_APPLY = _OTHERS + (" AND wait_event_type = 'Lock'"
                            " AND query ILIKE 'UPDATE chat_sessions%'")


def _terminate(sql: str) -> list[int]:
    """Terminate the backends ``sql`` selects (never our own); returns their pids."""
    with transaction() as s:
        return [pid for pid, _ in s.execute(text(sql))]


def test_pg_connections_dropped_between_claim_and_apply(
        api: RoutingFake, spawn: Callable[..., WorkerProcess], queue: str) -> None:
    written = {"pg": seed("pg", 11)}
    gate = api.hold()
    spawn()
    publish("pg", queue)
    gate.wait_entered()
    assert _terminate(_OTHERS)  # the worker's pooled connection among them
    gate.release()
    wait_for_runs("pg", lambda s: bool(s), what="the outcome")
    settle(queue)
    # The pool saw the dead connection's socket readable at checkout and replaced
    # it (recap.db.closed_by_server): the apply simply succeeded.
    assert statuses("pg") == ["applied"]
    assert_invariants(written)


def test_pg_connection_dropped_inside_the_apply(
        api: RoutingFake, spawn: Callable[..., WorkerProcess], queue: str) -> None:
    """The apply's own connection dies mid-transaction: nothing changes, a failed run
    names the error, and the retry applies."""
    written = {"pg2": seed("pg2", 11)}
    gate = api.hold()
    spawn()
    publish("pg2", queue)
    gate.wait_entered()
    locker = session_factory()()
    try:
        # Hold the session row so the apply's first UPDATE waits on our lock.
        locker.execute(text("SELECT id FROM chat_sessions WHERE id = 'pg2' FOR UPDATE"))
        gate.release()
        pids = wait_for(lambda: _terminate(_BLOCKED_APPLY), what="the apply to block")
        assert isinstance(pids, list) and len(pids) == 1
    finally:
        locker.rollback()
        locker.close()
    wait_for_runs("pg2", lambda s: "applied" in s, what="the retried apply")
    settle(queue)
    found = runs("pg2")
    assert [r.status for r in found] == ["failed", "applied"]
    assert found[0].error and "OperationalError" in found[0].error
    assert found[1].attempt == 2
    assert_invariants(written)


@pytest.mark.parametrize("fault", [500, 400])
def test_poison_session_is_dead_lettered_and_the_queue_keeps_flowing(
        api: RoutingFake, spawn: Callable[..., WorkerProcess], queue: str, fault) -> None:
    """500: retried up to RECAP_MAX_RETRIES (3), then dead; 400: dead at once."""
    from recap.cli import main as recap

    api.routes["POISON-7f3a"] = error(fault, "this session always fails")
    written = {f"ok-{k}": seed(f"ok-{k}", 11) for k in range(4)}
    written["poison"] = [add_message("poison", "user" if i % 2 == 0 else "assistant",
                                     f"POISON-7f3a {sentence(i, 40)}") for i in range(11)]
    spawn()
    for sid in ["poison", *sorted(k for k in written if k != "poison")]:
        publish(sid, queue)
    wait_for_runs("poison", lambda s: "dead" in s, what="the dead letter")
    for sid in written:
        if sid != "poison":
            wait_for_runs(sid, lambda s: "applied" in s, what=f"{sid} applied")
    settle(queue)
    assert statuses("poison") == (["failed"] * 3 + ["dead"] if fault == 500 else ["dead"])
    assert message_ids("poison") == written["poison"]  # nothing of it lost
    row = session_row("poison")
    assert row is not None and row.blocked_until is not None
    assert sweep_into(queue) == 0  # cooling down: the sweeper leaves it alone
    with publishing_to(queue):
        assert after_reply("poison") is False  # and so does the hook
    assert_invariants(written)

    api.routes.clear()  # "fix" the API, then the operator's retry
    with publishing_to(queue):
        assert recap(["retry", "poison"]) == 0
    wait_for_runs("poison", lambda s: "applied" in s, what="the retried poison session")
    settle(queue)
    assert Counter(statuses("poison"))["applied"] == 1
    row = session_row("poison")
    assert row is not None and row.blocked_until is None
    assert_invariants(written)
