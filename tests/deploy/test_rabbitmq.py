"""The core scenario on RabbitMQ: a real worker subprocess on an amqp:// broker
folds exactly the planned messages, including the follow-up job it queues itself.

Skipped with its reason when nothing listens on RabbitMQ's port (a failure when
CI sets RECAP_TEST_NO_SKIP=1). The broker is the only thing
that changes: same PostgreSQL database, same local Messages API, same code. The
test runs in a virtual host of its own (created with rabbitmqctl, deleted after),
so nothing another user declared on ``/`` (a ``celeryev`` exchange of another
type, say) can interfere, and nothing is left behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery

from recap.settings import load_settings
from recap.worker.celery_app import celery_config
from tests.env import ROOT
from tests.helpers import message_ids, require, runs, seed, session_row, wait_for

pytestmark = pytest.mark.system

AMQP_SERVER = os.environ.get("RECAP_TEST_AMQP", "amqp://guest:guest@127.0.0.1:5672")
LOW_THRESHOLDS = {"RECAP_POLICY": "threshold",
                  "RECAP_TRIGGER_MESSAGES": "10", "RECAP_TRIGGER_TOKENS": "100",
                  "RECAP_BATCH_SIZE": "5", "RECAP_KEEP_RECENT": "4"}


_LOGS: dict[int, Path] = {}  # each worker's log file, by pid


def _rabbitmq_listening() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5672), timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture(autouse=True, scope="module")
def _needs_rabbitmq() -> None:
    # Skipped with the reason without RabbitMQ; a failure under RECAP_TEST_NO_SKIP=1
    # (.ci/run installs and starts it).
    require(_rabbitmq_listening(), "no RabbitMQ on 127.0.0.1:5672 (apt-get install "
                                   "rabbitmq-server)")


def _rabbitmqctl(*args: str) -> None:
    subprocess.run(["rabbitmqctl", "-q", *args], check=True, capture_output=True, timeout=60)


@pytest.fixture
def amqp_url() -> Iterator[str]:
    """A virtual host of our own on the shared broker, deleted afterwards."""
    require(shutil.which("rabbitmqctl"), "rabbitmqctl is not installed (apt-get install "
                                         "rabbitmq-server): cannot create a virtual host")
    vhost = f"recap-test-{uuid.uuid4().hex[:8]}"
    _rabbitmqctl("add_vhost", vhost)
    try:
        _rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
        yield f"{AMQP_SERVER}/{vhost}"
    finally:
        _rabbitmqctl("delete_vhost", vhost)


@pytest.fixture
def queue() -> str:
    return f"recap-amqp-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def amqp_worker(queue: str, amqp_url: str,
                tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`celery worker` in a subprocess on RabbitMQ; stopped with SIGTERM (warm)."""
    env = {**os.environ, **LOW_THRESHOLDS, "CELERY_BROKER_URL": amqp_url,
           "RECAP_QUEUE": queue}
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "recap", "worker", "--pool", "threads",
             "-Q", queue, "--concurrency", "2", "--loglevel", "INFO",
             "-n", f"{queue}@%h", "--without-mingle", "--without-gossip"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    _LOGS[proc.pid] = log
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _log_tail(proc: subprocess.Popen[bytes]) -> str:
    return _LOGS[proc.pid].read_text(errors="replace")[-4000:]


def _alive_or_fail(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        raise AssertionError(f"worker exited with {proc.returncode}:\n{_log_tail(proc)}")


def test_summarize_and_follow_up_over_rabbitmq(
        queue: str, amqp_url: str, amqp_worker: subprocess.Popen[bytes],
        monkeypatch: pytest.MonkeyPatch) -> None:
    sid = f"amqp-{uuid.uuid4().hex[:8]}"
    # 20 messages: the first job folds 5 (15 left, still > 10), queues its
    # follow-up through RabbitMQ from inside the worker, which folds 5 more.
    ids = seed(sid, 20)

    # An enqueuer configured like the chat app's: its own Celery app on amqp, in
    # an environment that says amqp too. Celery lets CELERY_BROKER_URL override
    # conf.broker_url, and this process's points at Redis: left so, the event
    # dispatcher would take Redis's transport type and declare `celeryev` as a
    # fanout exchange on RabbitMQ, which the worker's (topic) then refuses.
    monkeypatch.setenv("CELERY_BROKER_URL", amqp_url)
    settings = load_settings(celery_broker_url=amqp_url, queue=queue)
    publisher = Celery("recap-amqp-test")
    publisher.conf.update(celery_config(settings))
    try:
        with publisher.connection_for_write(amqp_url) as conn:
            publisher.send_task("recap.tasks.summarize_session", [sid], queue=queue,
                                connection=conn)
    finally:
        publisher.close()

    def two_applied() -> bool:
        _alive_or_fail(amqp_worker)
        return [r.status for r in runs(sid)].count("applied") >= 2

    try:
        wait_for(two_applied, timeout=90, interval=0.2, what="two applied runs over RabbitMQ")
    except AssertionError as exc:
        seen = [(r.status, r.reason, r.error) for r in runs(sid)]
        raise AssertionError(
            f"{exc}; runs: {seen}\nworker log:\n{_log_tail(amqp_worker)}") from None

    applied = [r for r in runs(sid) if r.status == "applied"]
    assert [r.status for r in runs(sid)] == ["applied", "applied"]
    assert [(r.first_message_id, r.last_message_id, r.messages_condensed)
            for r in applied] == [(ids[0], ids[4], 5), (ids[5], ids[9], 5)]
    assert message_ids(sid) == ids[10:]  # exactly the two batches are gone
    row = session_row(sid)
    assert row is not None
    assert (row.summary_version, row.message_count, row.summarized_message_count) == (2, 10, 10)
    assert row.lease_token is None and row.enqueued_at is None and row.rolling_summary

    # SIGTERM is a warm shutdown: the worker finishes and exits cleanly.
    amqp_worker.send_signal(signal.SIGTERM)
    assert amqp_worker.wait(timeout=30) == 0
