"""Flower monitors Recap: a real Flower process watches a real summarize job.

Flower runs as a subprocess on the test Redis with basic auth taken from
FLOWER_BASIC_AUTH and the other FLOWER_* settings docker-compose.yml ships (the
way compose and the Procfile configure it); the job runs on the in-process
worker. Flower does not display custom events, so our ``summarization-complete``
event is checked with a ``celery.events`` receiver in this process, on the same
broker Flower listens to. tests/deploy/test_flower_browser.py reuses the fixture.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from recap import app
from recap.testing import FakeAnthropic, error
from tests.env import API_KEY, ROOT
from tests.helpers import free_port, message_ids, runs, seed, session_row, statuses, wait_for

pytestmark = pytest.mark.system

FLOWER_USER = "recap-ops"
FLOWER_PASSWORD = f"pw-{uuid.uuid4().hex}"
LOW_THRESHOLDS = {"RECAP_POLICY": "threshold",
                  "RECAP_TRIGGER_MESSAGES": 10, "RECAP_TRIGGER_TOKENS": 100,
                  "RECAP_BATCH_SIZE": 5, "RECAP_KEEP_RECENT": 4}


def shipped_flower_env() -> dict[str, str]:
    """The FLOWER_* settings docker-compose.yml gives Flower (the Procfile sets the
    same: tests/deploy/test_deploy_files.py), except the credentials."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    env = compose["services"]["flower"]["environment"]
    return {k: str(v) for k, v in env.items()
            if k.startswith("FLOWER_") and k != "FLOWER_BASIC_AUTH"}


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@dataclass
class Flower:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def get(self, path: str, *, auth: str | None = None) -> tuple[int, str]:
        """GET ``path``; ``auth`` defaults to the right credentials ("" for none)."""
        request = urllib.request.Request(self.url + path)
        header = _basic(FLOWER_USER, FLOWER_PASSWORD) if auth is None else auth
        if header:
            request.add_header("Authorization", header)
        try:
            with urllib.request.urlopen(request, timeout=15) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def json(self, path: str) -> Any:
        status, body = self.get(path)
        assert status == 200, f"{path}: HTTP {status}: {body[:500]}"
        return json.loads(body)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def up(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"Flower exited with {self.proc.returncode}:\n{self.output()}")
        try:
            return self.get("/healthcheck", auth="")[0] == 200
        except OSError:
            return False  # not listening yet


@pytest.fixture
def flower(tmp_path: Path) -> Iterator[Flower]:
    """A Flower process on the test broker; always terminated and reaped."""
    port = free_port()
    log = tmp_path / "flower.log"
    # os.environ holds the test env (broker URL, queue) set by conftest.
    env = {**os.environ, **shipped_flower_env(),
           "FLOWER_BASIC_AUTH": f"{FLOWER_USER}:{FLOWER_PASSWORD}"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "recap", "flower", f"--port={port}",
             "--address=127.0.0.1"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    instance = Flower(f"http://127.0.0.1:{port}", proc, log)
    try:
        wait_for(instance.up, timeout=60, interval=0.2, what="Flower to answer /healthcheck")
        yield instance
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def captured_events() -> Iterator[list[dict[str, Any]]]:
    """Every Celery event on the test broker while the block runs, in arrival order."""
    seen: list[dict[str, Any]] = []
    receivers: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            with app.connection_for_read() as conn:
                receiver = app.events.Receiver(conn, handlers={"*": seen.append})
                receivers.append(receiver)
                receiver.capture(limit=None, timeout=None, wakeup=False)
        except BaseException as exc:  # surfaced by the test, not lost in the thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="event-capture", daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        if receivers:
            receivers[0].should_stop = True  # the consume loop checks it every second
        thread.join(timeout=15)
    if failure:
        raise AssertionError(f"event receiver failed: {failure[0]!r}")


def wait_until_listening(flower: Flower, seen: list[dict[str, Any]]) -> None:
    """Send probe events until both Flower and our receiver see one.

    Events are broadcast, not queued: anything sent before a listener has
    subscribed is lost to it, so the job may only start after this returns.
    """
    probe = f"recap-probe-{uuid.uuid4().hex[:8]}@test"
    with app.events.default_dispatcher(hostname=probe) as dispatcher:
        def both_listening() -> bool:
            dispatcher.send("worker-online")
            in_flower = any(w.get("hostname") == probe
                            for w in flower.json("/workers?json=1")["data"])
            return in_flower and any(e.get("hostname") == probe for e in seen)

        wait_for(both_listening, timeout=30, interval=0.3, what="Flower to receive events")
        dispatcher.send("worker-offline")


def test_flower_shows_the_job_and_our_event_without_leaking_the_key(
        flower: Flower, celery_worker_thread: object,
        settings_env: Callable[..., None]) -> None:
    settings_env(**LOW_THRESHOLDS)
    sid = f"flower-{uuid.uuid4().hex[:8]}"
    ids = seed(sid, 12)

    with captured_events() as seen:
        wait_until_listening(flower, seen)
        task_id = app.send_task("recap.tasks.summarize_session", (sid,)).id
        wait_for(lambda: "applied" in statuses(sid), timeout=60, what="the applied run")

        def flower_task() -> dict[str, Any] | None:
            task = flower.json("/api/tasks").get(task_id)
            return task if task and task["state"] == "SUCCESS" else None

        task = wait_for(flower_task, timeout=30, interval=0.2, what="SUCCESS in Flower")
        assert isinstance(task, dict)
        wait_for(lambda: _completions(seen, sid), timeout=30, what="summarization-complete")

    assert task["name"] == "recap.tasks.summarize_session"
    assert sid in task["args"]
    assert message_ids(sid) == ids[5:]  # exactly the oldest 5 were folded in

    # The custom event's payload, as any events consumer sees it. Flower itself
    # receives it but shows custom events nowhere (it only counts them, under
    # the machine's bare hostname, which Celery puts on events sent from tasks).
    (event,) = _completions(seen, sid)
    row = session_row(sid)
    assert row is not None
    # The task's result, which Flower shows (repr of recap.worker.tasks' one-line outcome).
    assert task["result"] == repr(f"applied 5 msgs v{row.summary_version} (normal)")
    assert event["turns_condensed"] == 5
    assert event["summary_tokens"] == row.summary_tokens > 0
    assert event["uuid"] == task_id

    # Nothing Flower shows about tasks or workers carries the API key.
    for path in ("/api/tasks", "/workers?json=1", "/api/workers?refresh=1"):
        status, body = flower.get(path)
        assert status == 200, f"{path}: HTTP {status}"
        assert API_KEY not in body, f"{path} leaks the API key"


def _completions(seen: list[dict[str, Any]], sid: str) -> list[dict[str, Any]]:
    return [e for e in list(seen)
            if e.get("type") == "summarization-complete" and e.get("session_id") == sid]


def test_flower_api_needs_basic_auth(flower: Flower) -> None:
    assert flower.get("/api/tasks", auth="")[0] == 401
    assert flower.get("/api/tasks", auth=_basic(FLOWER_USER, "wrong"))[0] == 401
    assert flower.get("/", auth="")[0] == 401
    assert flower.get("/api/tasks")[0] == 200


def test_flower_metrics_and_healthcheck_skip_auth(flower: Flower) -> None:
    """Why docs/operations/monitoring.md says never to publish Flower's port: these two
    answer anyone, and /metrics names every worker and task type."""
    status, body = flower.get("/metrics", auth="")
    assert status == 200 and "flower_events_total" in body
    assert flower.get("/healthcheck", auth="") == (200, "OK")


def test_flower_never_shows_the_key_even_when_an_error_echoes_it(
        flower: Flower, celery_worker_thread: object, settings_env: Callable[..., None],
        fake_api: FakeAnthropic) -> None:
    settings_env(**LOW_THRESHOLDS)
    sid = f"flower-{uuid.uuid4().hex[:8]}"
    seed(sid, 12)
    # An API (or gateway) that echoes the key in its error body. A permanent
    # error: no retries, the job fails at once and Celery reports the exception.
    fake_api.always(error(401, f"invalid x-api-key: {API_KEY}"))
    with captured_events() as seen:
        wait_until_listening(flower, seen)
        task_id = app.send_task("recap.tasks.summarize_session", (sid,)).id

        def failed_task() -> dict[str, Any] | None:
            task = flower.json("/api/tasks").get(task_id)
            return task if task and task["state"] == "FAILURE" else None

        task = wait_for(failed_task, timeout=30, interval=0.2, what="FAILURE in Flower")
        assert isinstance(task, dict)
    assert [r.status for r in runs(sid)] == ["dead"]
    assert API_KEY not in (runs(sid)[0].error or "")
    assert "[redacted]" in task["exception"]  # the error body did reach Flower
    assert API_KEY not in json.dumps(task), "the task-failed event carries the API key"
