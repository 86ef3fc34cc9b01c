"""Small helpers shared by tests: seeding conversations and reading state."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from celery.signals import task_postrun
from sqlalchemy import select, text

from recap.api.ingest import add_message
from recap.db import transaction
from recap.models import ChatMessage, ChatSession, SummaryRun
from tests.checks import check_invariants

# CI sets this so that a test which would skip (a tool the machine lacks) fails
# instead: CI never skips silently.
NO_SKIP_ENV = "RECAP_TEST_NO_SKIP"


def require(present: object, reason: str) -> None:
    """Skip the calling test with ``reason`` unless ``present`` is truthy; under
    ``RECAP_TEST_NO_SKIP=1`` (CI) fail with the reason instead."""
    if present:
        return
    if os.environ.get(NO_SKIP_ENV, "") not in ("", "0"):
        pytest.fail(f"{reason} ({NO_SKIP_ENV} is set: this run may not skip)")
    pytest.skip(reason)


def require_module(module: str, install: str) -> None:
    """:func:`require` for an importable ``module``; ``install`` says how to get it."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except ImportError:  # its parent package is missing
        found = False
    require(found, f"{module} is not installed ({install})")


# The fixed rule (RECAP_POLICY=threshold) with thresholds low enough that a dozen
# short messages trigger a summary of five.
LOW: dict[str, Any] = {"RECAP_POLICY": "threshold", "RECAP_TRIGGER_MESSAGES": 10,
                       "RECAP_TRIGGER_TOKENS": 100, "RECAP_BATCH_SIZE": 5,
                       "RECAP_KEEP_RECENT": 4}
FINAL = frozenset({"applied", "skipped", "dead", "superseded"})

WORDS = ("budget invoice deploy kubernetes postgres latency refund airport hotel "
         "Lisbon March 14th $2,400 /etc/nginx/nginx.conf timeout retry customer "
         "schema migration release Friday Alice Bob sprint roadmap").split()


def sentence(i: int, words: int) -> str:
    return " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(words)) + f" (msg {i})."


def seed(session_id: str, n: int, *, words: int = 40, pinned: set[int] | None = None,
         roles: list[str] | None = None) -> list[int]:
    """Write ``n`` alternating user/assistant messages; returns their ids."""
    ids = []
    for i in range(n):
        role = roles[i] if roles else ("user" if i % 2 == 0 else "assistant")
        ids.append(add_message(session_id, role, sentence(i, words),
                               pinned=bool(pinned and i in pinned)))
    return ids


REFUSED = "refused for the test"


@contextmanager
def refusing_inserts(table: str, session_id: str) -> Iterator[None]:
    """While open, PostgreSQL refuses every new row of ``table`` for ``session_id``
    (an error naming :data:`REFUSED`), as it refuses a row it cannot hold: a fault
    inside a job's apply, through the real database."""
    with transaction() as s:
        s.execute(text(
            "CREATE FUNCTION test_refuse_insert() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN IF NEW.session_id = TG_ARGV[0] THEN "
            f"RAISE EXCEPTION '{REFUSED}'; END IF; RETURN NEW; END $$"))
        s.execute(text(f"CREATE TRIGGER test_refuse_insert BEFORE INSERT ON {table} "
                       "FOR EACH ROW EXECUTE FUNCTION test_refuse_insert(:sid)"
                       .replace(":sid", "'" + session_id.replace("'", "''") + "'")))
    try:
        yield
    finally:
        with transaction() as s:
            s.execute(text(f"DROP TRIGGER test_refuse_insert ON {table}"))
            s.execute(text("DROP FUNCTION test_refuse_insert()"))


def session_row(session_id: str) -> ChatSession | None:
    with transaction() as s:
        return s.get(ChatSession, session_id)


def session_of(session_id: str) -> ChatSession:
    """The session's row; fails the test when there is none."""
    row = session_row(session_id)
    assert row is not None, f"no session {session_id!r}"
    return row


def message_ids(session_id: str) -> list[int]:
    with transaction() as s:
        return list(s.scalars(select(ChatMessage.id).where(ChatMessage.session_id == session_id)
                              .order_by(ChatMessage.id)))


def runs(session_id: str | None = None) -> list[SummaryRun]:
    with transaction() as s:
        q = select(SummaryRun).order_by(SummaryRun.id)
        if session_id is not None:
            q = q.where(SummaryRun.session_id == session_id)
        return list(s.scalars(q))


def statuses(session_id: str) -> list[str]:
    return [r.status for r in runs(session_id)]


def as_dict(obj: Any) -> dict[str, Any]:
    return {c.name: getattr(obj, c.name) for c in obj.__table__.columns}


def run_and_wait(sid: str, *, n: int = 1, timeout: float = 60,
                 final: Collection[str] = FINAL) -> None:
    """Queue one summarize job and wait until ``sid`` has ``n`` runs in ``final``."""
    from recap.worker.celery_app import app

    app.send_task("recap.tasks.summarize_session", (sid,))
    wait_for_task(lambda: sum(1 for s in statuses(sid) if s in final) >= n, timeout=timeout,
                  what=f"{n} final run(s) of {sid}")


def assert_invariants(written: dict[str, list[int]]) -> None:
    with transaction() as s:
        problems = check_invariants(s, written=written)
        assert problems == [], problems


def wait_for(predicate: Callable[[], object], *, timeout: float = 30.0,
             interval: float = 0.02, what: str = "condition") -> object:
    """Poll ``predicate`` until it is truthy (its value is returned) or fail."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class _TaskEnds:
    """Counts the tasks this process's in-process worker finished (Celery's
    task_postrun), so a test waits for the next one instead of polling."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    def finished(self, **_: object) -> None:
        with self.changed:
            self.count += 1
            self.changed.notify_all()


TASK_ENDS = _TaskEnds()
task_postrun.connect(TASK_ENDS.finished, weak=False)
# A task can also end in a worker subprocess, which this process does not hear of:
# the check then runs again after this long.
SUBPROCESS_RECHECK_S = 0.5


def wait_for_task(predicate: Callable[[], object], *, timeout: float = 30.0,
                  what: str = "condition") -> object:
    """Check ``predicate`` now and again each time a task ends in this process (at the
    latest every SUBPROCESS_RECHECK_S) until it is truthy (returned), or fail."""
    deadline = time.monotonic() + timeout
    while True:
        with TASK_ENDS.changed:
            seen = TASK_ENDS.count
        value = predicate()
        if value:
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        def moved(since: int = seen) -> bool:
            return TASK_ENDS.count != since

        with TASK_ENDS.changed:
            TASK_ENDS.changed.wait_for(moved, timeout=min(remaining, SUBPROCESS_RECHECK_S))


def worker_idle(queue: str) -> bool:
    """No message waiting in ``queue`` and no job running or reserved (with an ETA)
    in this process's worker: what dramatiq's ``join`` waits for."""
    from celery.worker import state

    from recap.worker.celery_app import app

    if state.active_requests or state.reserved_requests:
        return False
    with app.connection_for_write() as conn:
        client = conn.default_channel.client
        # kombu's Redis transport keeps a queue in a list of that name, and
        # unacknowledged messages in its "unacked" hash.
        if client.llen(queue):
            return False
        # Each entry is [message, exchange, routing key]; only our queue's count.
        return not any(json.loads(v)[2] == queue for v in client.hvals("unacked"))


def join_worker(queue: str, *, timeout: float = 60.0) -> None:
    """Wait until every job queued so far has finished; with no worker running in
    this process, drop the jobs still waiting in ``queue`` instead (nobody would
    run them, and a worker started by a later test must not inherit them)."""
    if _worker_started():
        # Polled: a task is still "active" when its end is signalled.
        wait_for(lambda: worker_idle(queue), timeout=timeout, what=f"queue {queue} to drain")
        return
    from recap.worker.celery_app import app

    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge(queue)


# Set by conftest's celery_worker_thread fixture while its worker runs.
WORKER_RUNNING = {"in_process": False}


def _worker_started() -> bool:
    return WORKER_RUNNING["in_process"]


def free_port() -> int:
    """A local TCP port nothing listens on right now (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_on_terminal(argv: list[str], *, env: dict[str, str], cwd: str | os.PathLike[str],
                    timeout: float = 240) -> tuple[int, str, str]:
    """Run ``argv`` with its stderr on a pseudo-terminal (as a user at a terminal
    sees it) and its stdout on a pipe; returns (exit code, stdout, stderr)."""
    import pty
    import subprocess

    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=slave,
                            text=True)
    os.close(slave)
    chunks: list[bytes] = []

    def read() -> None:  # drain the terminal as the process writes: it never blocks on it
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the process closed its end
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    finally:
        reader.join(timeout=10)
        os.close(master)
    err = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return proc.returncode, out, err
