"""Worker subprocesses and the broker around them: tests/reliability and its soak.

:func:`start` and :func:`stop` are the one way these tests start and end a
process (each in a session of its own, so a SIGKILL takes its children too).
:class:`WorkerProcess` is one ``celery -A recap worker`` on a queue of its own;
``publishing_to``, ``publish``, ``sweep_into`` and ``settle`` send this
process's jobs there and wait until that queue's work is done. Recap's modules
are imported inside the functions: the soak sets the environment first.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.helpers import free_port, statuses, wait_for

ROOT = Path(__file__).resolve().parents[2]
SUMMARIZE = "recap.tasks.summarize_session"


# -- processes ---------------------------------------------------------------------

def start(cmd: Sequence[str], *, log: Path, env: Mapping[str, str] | None = None
          ) -> subprocess.Popen[bytes]:
    """Run ``cmd`` from the checkout in a new session (its own process group), with
    stdout and stderr appended to ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen(list(cmd), cwd=ROOT, env=dict(env or os.environ), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc: subprocess.Popen[bytes], *, grace: float = 0.0) -> int:
    """End ``proc`` (started by :func:`start`) and reap it; returns its exit code.

    With ``grace``, SIGTERM first (Celery's warm shutdown) and wait that long;
    then SIGKILL the whole process group: a crashed box, pool children and
    orphans of a main process that exited first included.
    """
    if grace and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    with contextlib.suppress(ProcessLookupError):  # the whole group is gone already
        os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait()


def tail(log: Path, lines: int = 60) -> str:
    text = log.read_text(errors="replace") if log.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


class LogFollower:
    """Copies a process's output to ``log`` line by line and wakes waiters on each line
    and at its end, so a test waits for a log line instead of polling the file."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        self._text, self._ended = "", False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._copy, args=(proc, log), daemon=True)
        self._thread.start()

    def _copy(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        assert proc.stdout is not None
        with open(log, "ab") as out:
            for line in iter(proc.stdout.readline, b""):
                out.write(line)
                out.flush()
                with self._changed:
                    self._text += line.decode(errors="replace")
                    self._changed.notify_all()
        with self._changed:  # the process (and every child holding the pipe) is gone
            self._ended = True
            self._changed.notify_all()

    def count(self, text: str) -> int:
        with self._changed:
            return self._text.count(text)

    def wait_for(self, text: str, *, times: int = 1, timeout: float = 60.0) -> bool:
        """True once ``text`` appeared ``times`` times; False at the output's end or timeout."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self._text.count(text) >= times or self._ended, timeout=timeout
            ) and self._text.count(text) >= times


class WorkerProcess:
    """One ``celery -A recap worker`` subprocess on ``queue``, logging to a file."""

    def __init__(self, label: str, *, queue: str, env: Mapping[str, str], log_dir: Path,
                 pool: str = "threads", concurrency: int = 2) -> None:
        self.label, self.queue, self.env, self.log_dir = label, queue, dict(env), log_dir
        self.pool, self.concurrency = pool, concurrency
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.nodes: list[str] = []  # the node name of every start (before "@host")
        self.log_path = log_dir / f"{label}.log"
        self._log: LogFollower

    def start(self, *, wait: bool = True, timeout: float = 60.0) -> WorkerProcess:
        self.starts += 1
        self.log_path = self.log_dir / f"{self.label}-{self.starts}.log"
        self.nodes.append(f"{self.label}-{self.starts}-{uuid.uuid4().hex[:6]}")
        name = f"{self.nodes[-1]}@%h"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "recap", "worker", "--pool", self.pool,
             "--concurrency", str(self.concurrency), "-Q", self.queue, "--loglevel", "INFO",
             "-n", name, "--without-heartbeat", "--without-gossip", "--without-mingle"],
            cwd=ROOT, env={**self.env, "RECAP_QUEUE": self.queue}, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True)
        self._log = LogFollower(self.proc, self.log_path)
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Block until the worker logs 'ready.'; raise with its log if it exits first."""
        if not self._log.wait_for(" ready.", timeout=timeout):
            state = ("exited with " + str(self.proc.returncode)
                     if self.proc is not None and self.proc.poll() is not None
                     else f"not ready within {timeout}s")
            raise RuntimeError(f"worker {self.label} {state}:\n{self.tail()}")

    def wait_logged(self, text: str, *, times: int = 1, timeout: float = 60.0) -> bool:
        """Block until this start's log holds ``text`` ``times`` times (True) or the
        worker exits or ``timeout`` passes (False): woken by each line, not polled."""
        return self._log.wait_for(text, times=times, timeout=timeout)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def children(self) -> list[int]:
        """Pids of the pool processes (prefork); empty for the threads pool."""
        assert self.proc is not None
        path = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        return [int(p) for p in path.read_text().split()] if path.exists() else []

    def logged(self, text: str) -> int:
        """How many times ``text`` appears in this start's log."""
        return self._log.count(text)

    def warm_shutdown(self, timeout: float = 30.0) -> None:
        """SIGTERM the main process (Celery's warm shutdown: running jobs finish, no new
        ones start); returns once the worker says it is shutting down (or has exited)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        if not self.wait_logged("Warm shutdown", timeout=timeout) and self.alive:
            raise AssertionError(f"worker {self.label} did not start its warm shutdown "
                                 f"within {timeout}s")

    def wait(self, timeout: float = 60.0) -> int:
        """Wait for the main process to exit; its exit code."""
        assert self.proc is not None
        return self.proc.wait(timeout)

    def kill(self) -> None:
        """SIGKILL the whole process group (a crashed box), and reap it."""
        if self.proc is not None:
            stop(self.proc)

    def close(self) -> None:
        self.kill()

    def tail(self, lines: int = 60) -> str:
        return tail(self.log_path, lines)


# -- the broker ----------------------------------------------------------------------

@contextlib.contextmanager
def publishing_to(queue: str) -> Iterator[None]:
    """Route this process's jobs (hook, sweeper, follow-ups, ``recap retry``) to ``queue``."""
    from recap.worker.celery_app import app

    before = (app.conf.task_routes, app.conf.task_default_queue)
    # conf.update refreshes the cached router (celery.app.amqp._handle_conf_update).
    app.conf.update(task_routes={"recap.tasks.*": {"queue": queue}}, task_default_queue=queue)
    try:
        yield
    finally:
        app.conf.update(task_routes=before[0], task_default_queue=before[1])


def broker_backlog(queue: str, *, restore: bool = False, unacked: bool = True) -> int:
    """Messages of ``queue`` waiting (and, with ``unacked``, delivered but unacked).

    With ``restore``, first requeue unacked messages older than the visibility
    timeout, as every starting consumer does (kombu's periodic scan is slower).
    """
    from recap.worker.celery_app import app

    with app.connection_for_write() as conn:
        channel: Any = conn.default_channel
        if restore:
            channel.qos.restore_visible(num=1000, interval=1)
        client = channel.client
        # Each unacked entry is [message, exchange, routing key].
        held = sum(1 for raw in client.hvals(channel.unacked_key)
                   if json.loads(raw)[2] == queue) if unacked else 0
        return int(client.llen(queue)) + held


def publish(session_id: object, queue: str, **options: Any) -> str:
    """Send one summarize job for ``session_id`` to ``queue`` by name; returns its task id."""
    from recap.worker.celery_app import app

    return str(app.send_task(SUMMARIZE, (session_id,), queue=queue, **options).id)


def sweep_into(queue: str) -> int:
    """Run the real sweeper once, publishing to ``queue``; returns how many it queued."""
    from recap.settings import get_settings
    from recap.worker.jobs.sweeper import sweep

    with publishing_to(queue):
        return sweep(get_settings())


def activity() -> dict[str, int]:
    """How many sessions are leased, pending, due and cooling down, in one statement
    (one snapshot: separate queries could miss a claim committing between them)."""
    from sqlalchemy import func, select

    from recap.db import transaction, utcnow
    from recap.models import ChatSession
    from recap.settings import get_settings
    from recap.worker.jobs.sweeper import due_query

    now = utcnow()
    due = due_query(get_settings(), now=now, limit=None).subquery()
    with transaction() as s:
        row = s.execute(select(
            func.count().filter(ChatSession.lease_token.isnot(None)),
            func.count().filter(ChatSession.enqueued_at.isnot(None)),
            select(func.count()).select_from(due).scalar_subquery(),
            func.count().filter(ChatSession.blocked_until > now),
        ).select_from(ChatSession)).one()
    return dict(zip(("leased", "pending", "due", "blocked"), map(int, row), strict=True))


def busy(queue: str) -> list[str]:
    """Why the system is not idle yet (empty when idle): leases, pending, due, queued.

    The database is read first: a job in flight has a pending marker or a lease
    until it is done, so a message taken from the queue meanwhile is not missed.
    """
    counts = activity()
    counts.pop("blocked")
    counts["queued"] = broker_backlog(queue, unacked=False)
    return [f"{n} {what}" for what, n in counts.items() if n]


def settle(queue: str, *, timeout: float = 90.0) -> None:
    """Sweep into ``queue`` until nothing is leased, pending, due or queued."""
    def idle() -> bool:
        sweep_into(queue)
        return not busy(queue)

    try:
        wait_for(idle, timeout=timeout, interval=0.5, what="idle workers")
    except AssertionError as exc:
        raise AssertionError(f"{exc} ({', '.join(busy(queue))})") from None


def sweep_until(queue: str, done: Callable[[], bool], *, timeout: float = 60.0,
                what: str = "condition") -> None:
    """Run the real sweeper into ``queue`` before each check of ``done()`` until it holds
    (a dead worker's session comes back only through the sweeper)."""
    def swept() -> bool:
        sweep_into(queue)
        return done()

    wait_for(swept, timeout=timeout, interval=0.5, what=what)


def wait_for_runs(session_id: str, predicate: Callable[[list[str]], bool], *,
                  timeout: float = 60.0, what: str = "runs") -> list[str]:
    """Wait until the statuses of ``session_id``'s runs satisfy ``predicate``; return them."""
    wait_for(lambda: predicate(statuses(session_id)), timeout=timeout, what=what)
    return statuses(session_id)


class PrivateRedis:
    """A redis-server of its own on a free port, without persistence: a restart
    empties it (every queued and unacked message is gone)."""

    def __init__(self, log: Path) -> None:
        self.port, self.log = free_port(), log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import redis

        self.proc = start(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                           "--save", "", "--appendonly", "no", "--daemonize", "no"],
                          log=self.log)
        client = redis.Redis.from_url(self.url)

        def up() -> bool:
            with contextlib.suppress(redis.ConnectionError):
                return bool(client.ping())
            return False

        wait_for(up, timeout=20, what="the private redis-server")
        client.close()

    def kill(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc = None
