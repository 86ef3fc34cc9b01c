"""No silent lossy fallback: a real ``celery -A recap worker``
refuses to start without ANTHROPIC_API_KEY unless RECAP_SUMMARIZER=offline says
so, and when it does run offline it says so loudly; at its default level it logs
one line per job. Each worker is a subprocess
on a queue of its own, so it never takes another test's jobs."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from recap.api.ingest import add_message
from recap.store.enqueue import SUMMARIZE_TASK, TITLE_TASK
from recap.worker.celery_app import app
from tests.env import ROOT
from tests.helpers import sentence

pytestmark = pytest.mark.system

START_TIMEOUT_S = 120  # a bound for a broken build, never a synchronisation delay


def worker_env(**changes: str | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "RECAP_QUEUE": f"recap-start-{uuid.uuid4().hex[:8]}"}
    env.pop("RECAP_SUMMARIZER", None)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def worker_cmd(env: dict[str, str]) -> list[str]:
    # `recap worker`, as README runs it: Celery's worker on Recap's app.
    recap = str(Path(sys.executable).parent / "recap")
    return [recap, "worker", "--pool", "solo", "-Q", env["RECAP_QUEUE"],
            "-n", f"{env['RECAP_QUEUE']}@localhost", "--without-mingle", "--without-gossip",
            "--without-heartbeat", "--loglevel", "INFO"]


@pytest.mark.parametrize("key", [None, ""])
def test_the_worker_refuses_to_start_without_an_api_key(key: str | None) -> None:
    env = worker_env(ANTHROPIC_API_KEY=key)
    done = subprocess.run(worker_cmd(env), cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=START_TIMEOUT_S)  # it must exit by itself
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "recap: error: ANTHROPIC_API_KEY is not set" in output, output
    assert "RECAP_SUMMARIZER=offline" in output
    assert " ready." not in output  # never consumed anything


def test_the_worker_runs_offline_only_when_told_and_says_so() -> None:
    env = worker_env(ANTHROPIC_API_KEY=None, RECAP_SUMMARIZER="offline")
    proc = subprocess.Popen(worker_cmd(env), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)  # the process closed its output: it exited

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    try:
        while True:
            line = lines.get(timeout=START_TIMEOUT_S)
            if line is None:
                pytest.fail("the offline worker exited at start:\n" + "".join(seen))
            seen.append(line)
            if line.startswith("recap worker ready: "):
                break
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # Celery's warm shutdown
        try:
            proc.wait(START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    output = "".join(seen)
    # `recap worker` says when it takes jobs, at any log level: queue and broker.
    assert f"consuming {env['RECAP_QUEUE']} from redis://" in seen[-1], output
    warning = next((ln for ln in seen if "RECAP_SUMMARIZER=offline" in ln), None)
    assert warning is not None, output
    # Logged at worker_init, before Celery configures logging: Python's last-resort
    # handler prints it to stderr as it is, ahead of the banner.
    assert "not Claude" in warning and "condensed messages are deleted" in warning


def test_recap_worker_logs_one_line_per_job_at_its_default_level() -> None:
    # No --loglevel: `recap worker`'s own default (INFO, one line per job).
    env = worker_env(ANTHROPIC_API_KEY=None, RECAP_SUMMARIZER="offline",
                     RECAP_POLICY="threshold", RECAP_TRIGGER_MESSAGES="4",
                     RECAP_TRIGGER_TOKENS="10", RECAP_BATCH_SIZE="4", RECAP_KEEP_RECENT="2")
    argv = [a for a in worker_cmd(env) if a not in ("--loglevel", "INFO")]
    sid = f"one-line-{uuid.uuid4().hex[:6]}"
    for i in range(8):
        add_message(sid, "user" if i % 2 == 0 else "assistant", sentence(i, 20))
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []

    def until(found: Callable[[str], bool]) -> None:
        while True:
            line = lines.get(timeout=START_TIMEOUT_S)
            if line is None:
                pytest.fail("the worker exited:\n" + "".join(seen))
            seen.append(line)
            if found(line):
                return

    try:
        until(lambda line: line.startswith("recap worker ready: "))
        start = len(seen)
        summarize = app.send_task(SUMMARIZE_TASK, (sid,), queue=env["RECAP_QUEUE"]).id
        until(lambda line: '"event": "summarize"' in line)
        title = app.send_task(TITLE_TASK, (sid,), queue=env["RECAP_QUEUE"]).id
        until(lambda line: title in line)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    jobs = seen[start:]
    output = "".join(seen)
    # The summarize job: its JSON outcome line, nothing of Celery's about it.
    [line] = [ln for ln in jobs if summarize in ln]
    assert f'"session_id": "{sid}"' in line and '"status": "applied"' in line, output
    # The title job: Celery's line with its result.
    [line] = [ln for ln in jobs if title in ln]
    assert "succeeded in" in line and "'titled'" in line, output
    assert not [ln for ln in jobs if " received" in ln or '"event": "title"' in ln], output
