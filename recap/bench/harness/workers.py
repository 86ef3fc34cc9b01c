"""Celery workers for benchmarks: in-process (threads) or a real ``celery worker`` process,
and waiting until a session's jobs are done."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# The last lines each subprocess worker printed, by pid (for error reports).
LOG_TAILS: dict[int, list[str]] = {}


@contextmanager
def inprocess_worker(concurrency: int = 4) -> Iterator[Any]:
    """A real Celery worker in this process (threads pool), as tests/conftest.py runs it."""
    from celery.contrib.testing.worker import start_worker

    from recap import app

    with start_worker(app, pool="threads", concurrency=concurrency, perform_ping_check=False,
                      loglevel="WARNING", shutdown_timeout=60) as w:
        yield w


@contextmanager
def subprocess_worker(concurrency: int, *, env: dict[str, str] | None = None,
                      pool_size: int | None = None, profile: str | None = None,
                      ready_timeout: float = 60.0) -> Iterator[subprocess.Popen[str]]:
    """``celery -A recap worker -P threads -c N`` as a child process; yields it once ready.

    With ``pool_size``, the worker's SQLAlchemy pool has that many connections
    (harness/pooled_worker.py) instead of the default 5 + 10 overflow. With
    ``profile``, the worker runs under yappi's CPU clock and writes its profile
    there at shutdown (harness/profiled_worker.py).
    """
    env = dict(env or {})
    launcher = "celery"
    if pool_size is not None:
        launcher = "recap.bench.harness.pooled_worker"
        env["RECAP_BENCH_POOL_SIZE"] = str(pool_size)
    if profile is not None:
        launcher = "recap.bench.harness.profiled_worker"
        env["RECAP_BENCH_PROFILE"] = profile
    cmd = [sys.executable, "-m", launcher, "-A", "recap", "worker", "-P", "threads",
           "-c", str(concurrency), "-Q", os.environ["RECAP_QUEUE"], "--loglevel", "INFO",
           "--without-gossip", "--without-mingle", "--without-heartbeat",
           "-n", f"bench-{os.getpid()}-{concurrency}@%h"]
    proc = subprocess.Popen(cmd, env={**os.environ, **env}, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ready = threading.Event()
    tail: list[str] = []

    def drain() -> None:  # keep reading, or a full pipe would block the worker's logging
        assert proc.stderr is not None
        for line in proc.stderr:
            tail.append(line)
            del tail[:-200]
            if " ready." in line:
                ready.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        deadline = time.monotonic() + ready_timeout
        while not ready.wait(0.1):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("celery worker did not start:\n" + "".join(tail))
        LOG_TAILS[proc.pid] = tail  # for error reports
        yield proc
    finally:
        proc.terminate()  # warm shutdown: running jobs finish
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def session_idle(session_id: str) -> bool:
    """No queued and no running job for the session (the hook's own markers)."""
    from sqlalchemy import select

    from recap.db import transaction
    from recap.models import ChatSession

    with transaction() as s:
        row = s.execute(select(ChatSession.enqueued_at, ChatSession.lease_token)
                        .where(ChatSession.id == session_id)).one_or_none()
    return row is None or (row[0] is None and row[1] is None)


def wait_idle(session_id: str, *, timeout: float = 120.0, interval: float = 0.01) -> None:
    deadline = time.monotonic() + timeout
    while not session_idle(session_id):
        if time.monotonic() > deadline:
            raise RuntimeError(f"session {session_id} still busy after {timeout}s")
        time.sleep(interval)


def first_errors() -> list[str]:
    """The first three errors recorded on summary runs (for a benchmark's failure report)."""
    from sqlalchemy import select

    from recap.db import transaction
    from recap.models import SummaryRun

    with transaction() as s:
        return [str(e) for e in s.scalars(select(SummaryRun.error)
                                          .where(SummaryRun.error.isnot(None)).limit(3))]


def count_runs(status: str = "applied") -> int:
    from sqlalchemy import func, select

    from recap.db import transaction
    from recap.models import SummaryRun

    with transaction() as s:
        return int(s.scalar(select(func.count()).select_from(SummaryRun)
                            .where(SummaryRun.status == status)) or 0)
