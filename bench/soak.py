"""Soak run: real worker processes under injected API faults and SIGKILLs.

A producer ingests sessions x messages through ``add_message`` + ``after_reply``,
a killer SIGKILLs a random worker every few seconds and restarts it, the sweeper
runs periodically, and once the queue drains the invariant (worker/checks.py) is
checked. Usage: ``python -m bench.soak --quick``. Needs PostgreSQL and Redis.

Two more fault modes: ``--redis-restart-every N`` runs a redis-server of the
soak's own (its own port) and kills and restarts it every N ingested messages
while jobs run (the workers must reconnect by themselves: the soak counts the
worker restarts it had to do); ``--lossy`` makes the fake API return answers
the database cannot store (NULs, lone surrogates, ``"\\u0000"`` escapes in the
extraction JSON) and over-long answers cut off at ``max_tokens``.

``run_soak`` is the core: it uses whatever database and broker this process is
configured with (settings are read from the environment), so ``main`` sets the
environment before it configures ``worker``. The worker subprocesses and the
broker helpers are tests/reliability/procs.py's (run from the repository root,
where ``tests`` is importable).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.fake_anthropic import FakeAnthropic, Reply, default_summary, error, ok
from tests.helpers import wait_for
from tests.reliability.procs import (
    ROOT,
    WorkerProcess,
    activity,
    broker_backlog,
    publishing_to,
    start,
    stop,
)

# Both this process (hook, sweeper) and the workers read these. Small batches and
# short limits so many jobs, retries and lease expiries happen in minutes; the
# lease/visibility/time-limit relations still satisfy Settings' checks.
SOAK_SETTINGS = {
    "RECAP_TRIGGER_MESSAGES": "20", "RECAP_TRIGGER_TOKENS": "200", "RECAP_BATCH_SIZE": "10",
    "RECAP_KEEP_RECENT": "6", "RECAP_MAX_RETRIES": "5", "RECAP_RETRY_BACKOFF_S": "0.2",
    "RECAP_RETRY_BACKOFF_MAX_S": "1", "RECAP_LLM_TIMEOUT_S": "4",
    "RECAP_TASK_SOFT_TIME_LIMIT_S": "5", "RECAP_TASK_TIME_LIMIT_S": "6", "RECAP_LEASE_S": "8",
    "RECAP_VISIBILITY_TIMEOUT_S": "10", "RECAP_ENQUEUE_STALE_S": "15",
    "RECAP_DEAD_COOLDOWN_S": "3", "RECAP_SUMMARIZER": "claude",
}
WORDS = ("budget invoice deploy kubernetes postgres latency refund airport hotel Lisbon "
         "March timeout retry customer schema migration release Friday Alice Bob").split()


class ChaosFake(FakeAnthropic):
    """The fake Messages API failing a share of calls: transient kinds and a permanent 400."""

    TRANSIENT = (error(429, "chaos: rate limited", headers={"retry-after": "0"}),
                 error(500, "chaos: internal error"), error(503, "chaos: unavailable"),
                 error(529, "chaos: overloaded"), Reply("reset"))

    def __init__(self, *, fail_rate: float, permanent_rate: float, seed: int,
                 lossy_rate: float = 0.0) -> None:
        self.fail_rate, self.permanent_rate = fail_rate, permanent_rate
        self.lossy_rate = lossy_rate
        self._rng = random.Random(seed)
        self._body = threading.local()
        self.injected = {"transient": 0, "permanent": 0}
        super().__init__()
        # A SIGKILLed worker resets its connections; that is the point, not news.
        self._server.handle_error = lambda *_: None  # type: ignore[method-assign]

    def _handler(self) -> Any:
        base: Any = super()._handler()
        fake = self

        class Handler(base):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:  # noqa: N802
                # Keep the request body for _next (which kind of call, which prompt).
                me: Any = self
                raw = me.rfile.read(int(me.headers.get("content-length", 0)))
                fake._body.raw = raw
                keep, me.rfile = me.rfile, io.BytesIO(raw)
                try:
                    super().do_POST()
                finally:
                    me.rfile = keep  # the next request on this keep-alive connection

        return Handler

    def _next(self) -> Reply:
        with self._lock:
            r, pick = self._rng.random(), self._rng.choice(self.TRANSIENT)
            if r < self.permanent_rate:
                self.injected["permanent"] += 1
                return error(400, "chaos: permanent failure for this request")
            if r < self.permanent_rate + self.fail_rate:
                self.injected["transient"] += 1
                return pick
            lossy = self._rng.random() < self.lossy_rate
            kind, n = self._rng.randrange(3), self._rng.randrange(10**6)
        if lossy:
            reply = self._lossy(kind, n)
            if reply is not None:
                return reply
        return super()._next()

    def _lossy(self, kind: int, n: int) -> Reply | None:
        """An answer the database cannot store as is, or one cut off at max_tokens."""
        try:
            body = json.loads(getattr(self._body, "raw", b"") or b"{}")
            prompt = body["messages"][0]["content"]
            cap = int(body["max_tokens"])
        except (ValueError, KeyError, IndexError, TypeError):
            return None
        if not isinstance(prompt, str):
            return None
        system = str(body.get("system", ""))
        cut_off = kind == 2
        if system.startswith("You extract durable facts"):
            name = ("extraction_nul_escape", "extraction_surrogate_escape",
                    "extraction_cut_off")[kind]
            if cut_off:  # an array cut off mid-way, as a model at its cap leaves it
                text = '[{"fact": "The user ' + "really " * (4 * cap) + "likes"
            else:  # JSON escapes: after parsing, a real NUL / a lone surrogate
                escape = r"\u0000" if kind == 0 else r"\udc80"
                text = (f'[{{"fact": "The user{escape} likes tea ({n})", '
                        '"category": "preference", "importance": 3}]')
        elif system.startswith(("You maintain a rolling summary", "You write short titles")):
            what = "summary" if system.startswith("You maintain") else "title"
            name = f"{what}_" + ("nul", "surrogate", "cut_off")[kind]
            text = default_summary(prompt, 3 * cap) if what == "summary" else f"Plans {n}"
            if cut_off:  # over-long: Recap must not apply an answer cut off at its cap
                text = text.replace("\n", " ") + " and then" * (4 * cap)
            elif kind == 0:
                text = text.replace(" ", " \x00", 1) + f"\x00 ({n})"
            else:
                text = text.replace(" ", " \udc80", 1) + f" \ud800 ({n})"
        else:
            return None
        with self._lock:
            self.injected[name] = self.injected.get(name, 0) + 1
        return ok(text, stop_reason="max_tokens") if kind == 2 else ok(text)


@dataclass
class SoakConfig:
    sessions: int = 200
    messages: int = 300
    workers: int = 2
    concurrency: int = 4
    pool: str = "threads"
    fail_rate: float = 0.3
    permanent_rate: float = 0.01
    kill_every: float = 5.0
    min_kills: int = 0  # keep killing after the producer is done until this many
    max_kills: int | None = None
    api_latency: float = 0.05  # seconds per fake API call, so kills land mid-job
    sweep_every: float = 2.0
    drain_timeout: float = 600.0
    seed: int = 1
    redis_restart_every: int = 0  # kill and restart the soak's own redis-server (0: never)
    lossy_rate: float = 0.0  # share of answers the database cannot store, or cut off


@dataclass
class SoakResult:
    messages_written: int = 0
    messages_lost: int = 0
    duplicate_applies: int = 0
    summaries_applied: int = 0
    retries: int = 0
    dead_runs: int = 0
    runs_by_status: dict[str, int] = field(default_factory=dict)
    errors_by_kind: dict[str, int] = field(default_factory=dict)  # failed/dead runs' errors
    injected_faults: dict[str, int] = field(default_factory=dict)
    worker_kills: int = 0
    redis_restarts: int = 0
    leases_at_redis_kill: int = 0  # jobs holding a lease when the broker was killed, summed
    worker_reconnects: int = 0  # "Connected to redis" logged again by a running worker
    worker_restarts: int = 0  # workers that exited by themselves and had to be restarted
    wall_s: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class SoakRedis:
    """A redis-server of the soak's own on a free port, without persistence: a
    restart empties it (every queued and unacked message is gone)."""

    def __init__(self, log: Path) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.log = log
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

        wait_for(up, timeout=20, what="the soak's redis-server")
        client.close()

    def kill(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc = None


def forget_broker_connections() -> None:
    """Drop this process's cached broker connections and producers (after a restart)."""
    from worker.celery_app import app

    app._pool = None  # type: ignore[attr-defined]
    app.amqp._producer_pool = None  # type: ignore[attr-defined]


def forget_queue(queue: str, nodes: list[str]) -> None:
    """Remove what kombu leaves in Redis after the run: the queue's list and binding
    keys, and the pidbox bindings of this run's workers (``nodes``)."""
    from worker.celery_app import app

    with app.connection_for_write() as conn:
        client = conn.default_channel.client  # type: ignore[attr-defined]
        client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        pidbox = "_kombu.binding.celery.pidbox"
        mine = [m for m in client.smembers(pidbox)
                if any(f"{node}@" in m.decode(errors="replace") for node in nodes)]
        if mine:
            client.srem(pidbox, *mine)
        if not client.exists(pidbox):
            client.zrem("_kombu.binding_deadlines", "celery.pidbox")


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + f" ({rng.randrange(10**6)})."


def _guard(errors: list[BaseException], target: object) -> threading.Thread:
    def run() -> None:
        try:
            target()  # type: ignore[operator]
        except BaseException as exc:  # reported by run_soak after the join
            errors.append(exc)
    return threading.Thread(target=run, daemon=True)


def _idle(queue: str) -> bool:
    """No lease held, no job pending, nothing due or cooling down, and no message of
    ``queue`` in the broker (unacked ones past the visibility timeout are requeued
    first). A pending marker counts on its own: a publish lost with a restarted
    broker leaves one with nothing in the queue until it goes stale and is swept."""
    counts = activity()
    return not (counts["leased"] or counts["pending"] or counts["due"] or counts["blocked"]) \
        and broker_backlog(queue, restore=True) == 0


class _Sweeps:
    """How many sweeps have started and finished (the drain waits for a whole one)."""

    def __init__(self) -> None:
        self.started = self.finished = 0


def _drain(queue: str, errors: list[BaseException], sweeps: _Sweeps, *, timeout: float,
           problems: list[str]) -> None:
    """Wait until idle twice in a row with a whole sweep in between (nothing in flight)."""
    def idle_across_a_sweep() -> bool:
        if errors or not _idle(queue):
            return bool(errors)
        after = sweeps.started  # a sweep that starts after this check has to finish
        wait_for(lambda: sweeps.finished > after or errors, timeout=timeout,
                 what="a sweep")
        return bool(errors) or _idle(queue)

    try:
        wait_for(idle_across_a_sweep, timeout=timeout, interval=0.5, what="the drain")
    except AssertionError:
        problems.append(f"did not drain within {timeout}s")
        return
    if errors:
        problems.append(f"a soak thread failed: {errors[0]!r}")


def run_soak(cfg: SoakConfig, *, queue: str, log_dir: Path,
             redis_server: SoakRedis | None = None) -> SoakResult:
    """Run one soak against this process's configured database and broker; never raises
    for invariant violations (they are in ``problems``). With
    ``cfg.redis_restart_every``, ``redis_server`` must be the configured broker."""
    from sqlalchemy import func, select

    from models import SummaryRun
    from worker.api.ingest import add_message, after_reply
    from worker.checks import check_invariants
    from worker.db import transaction
    from worker.jobs.sweeper import sweep
    from worker.settings import get_settings

    if cfg.redis_restart_every and redis_server is None:
        raise ValueError("redis_restart_every needs the soak's own redis_server")
    rng, killer_rng = random.Random(cfg.seed), random.Random(cfg.seed + 1)
    fake = ChaosFake(fail_rate=cfg.fail_rate, permanent_rate=cfg.permanent_rate,
                     seed=cfg.seed, lossy_rate=cfg.lossy_rate)
    fake.start()
    fake.delay = cfg.api_latency
    env = {**os.environ, "ANTHROPIC_BASE_URL": fake.url}
    workers = [WorkerProcess(f"soak{k}", queue=queue, env=env, log_dir=log_dir, pool=cfg.pool,
                             concurrency=cfg.concurrency) for k in range(cfg.workers)]
    sids = [f"soak-{uuid.uuid4().hex[:8]}-{i}" for i in range(cfg.sessions)]
    written: dict[str, list[int]] = {sid: [] for sid in sids}
    result, errors, sweeps = SoakResult(), list[BaseException](), _Sweeps()
    produced, done = threading.Event(), threading.Event()
    lifecycle = threading.Lock()  # the killer and the watcher: one (re)start at a time
    outage = max(1, cfg.redis_restart_every // 10)  # messages ingested while Redis is down

    connected: dict[str, int] = {}  # worker log -> "Connected to redis" count at the kill

    def restart_redis() -> None:
        """Kill the broker while a job runs (waits for a lease first, up to 30 s)."""
        assert redis_server is not None
        with contextlib.suppress(AssertionError):  # none came: kill it anyway
            wait_for(lambda: activity()["leased"] > 0, timeout=30, interval=0.05,
                     what="a job holding a lease")
        with lifecycle:
            connected.clear()
            connected.update({str(w.log_path): w.logged("Connected to redis") for w in workers})
            result.leases_at_redis_kill += activity()["leased"]
            redis_server.kill()
        result.redis_restarts += 1

    def redis_back() -> None:
        """Start the broker again (empty) on its port; wait until every worker has
        reconnected by itself (a worker that exited is restarted by ``watch``)."""
        assert redis_server is not None
        redis_server.start()
        forget_broker_connections()

        def reconnected() -> bool:
            with lifecycle:
                return all(str(w.log_path) not in connected  # restarted since the kill
                           or w.logged("Connected to redis") > connected[str(w.log_path)]
                           for w in workers)

        try:
            wait_for(reconnected, timeout=120, interval=0.1, what="the workers to reconnect")
        except AssertionError:
            result.problems.append(f"a worker did not reconnect within 120s after Redis "
                                   f"restart {result.redis_restarts}")

    def produce() -> None:
        count, down, back_at = 0, False, 0
        for m in range(cfg.messages):
            for sid in sids:
                role = "user" if m % 2 == 0 else "assistant"
                written[sid].append(add_message(sid, role, _text(rng, rng.randint(8, 40))))
                if role == "assistant":
                    after_reply(sid)  # never raises, Redis down or not
                count += 1
                if down and count >= back_at:
                    redis_back()
                    down = False
                if cfg.redis_restart_every and not down \
                        and count % cfg.redis_restart_every == 0:
                    restart_redis()
                    down, back_at = True, count + outage
        if down:
            redis_back()
        produced.set()

    def kill() -> None:
        if cfg.kill_every <= 0:
            return  # --kill-every 0: faults only, no crashes
        while not (produced.wait(cfg.kill_every) and result.worker_kills >= cfg.min_kills):
            if cfg.max_kills is not None and result.worker_kills >= cfg.max_kills:
                return
            victim = killer_rng.choice(workers)
            with lifecycle:
                victim.kill()
                result.worker_kills += 1
                victim.start()

    def watch() -> None:
        """Restart (and count) a worker that exited by itself: none should."""
        while not done.wait(0.5):
            with lifecycle:
                for w in workers:
                    if not w.alive:
                        result.worker_restarts += 1
                        result.problems.append(
                            f"worker {w.label} (start {w.starts}) exited by itself with "
                            f"{w.proc.returncode if w.proc else None}:\n{w.tail(15)}")
                        w.start(wait=False)

    def sweep_loop() -> None:
        while not done.wait(cfg.sweep_every):
            sweeps.started += 1
            sweep(get_settings())
            sweeps.finished += 1

    started = time.monotonic()
    try:
        with publishing_to(queue):
            for w in workers:
                w.start(wait=False)
            for w in workers:
                w.wait_ready()
            threads = [_guard(errors, f) for f in (produce, kill, sweep_loop, watch)]
            for t in threads:
                t.start()
            threads[0].join()
            produced.set()
            threads[1].join()
            _drain(queue, errors, sweeps, timeout=cfg.drain_timeout, problems=result.problems)
            done.set()
            threads[2].join()
            threads[3].join()
    finally:
        done.set()
        with lifecycle:
            for w in workers:
                w.close()
        fake.stop()
        if redis_server is None:
            forget_queue(queue, [node for w in workers for node in w.nodes])
    result.wall_s = round(time.monotonic() - started, 1)
    # Each start connects once; every further "Connected to redis" is a reconnect.
    result.worker_reconnects = sum(
        max(0, log.read_text(errors="replace").count("Connected to redis") - 1)
        for log in log_dir.glob("*.log") if log.name != "redis.log")
    result.injected_faults = dict(fake.injected)
    result.messages_written = sum(map(len, written.values()))
    with transaction() as s:
        problems = check_invariants(s, written=written, idle=True)
        result.runs_by_status = {st: int(n) for st, n in s.execute(
            select(SummaryRun.status, func.count()).group_by(SummaryRun.status))}
        for (error,) in s.execute(select(SummaryRun.error).where(SummaryRun.error.isnot(None))):
            kind = str(error).split(":", 1)[0][:60]
            result.errors_by_kind[kind] = result.errors_by_kind.get(kind, 0) + 1
    # Model output the database cannot store must be sanitised, never a failed apply.
    unstorable = {k: n for k, n in result.errors_by_kind.items()
                  if k in ("DataError", "UnicodeEncodeError", "CharacterNotInRepertoire")}
    if unstorable:
        problems.append(f"runs failed storing model output: {unstorable}")
    result.problems += problems
    result.messages_lost = sum("(lost)" in p for p in problems)
    result.duplicate_applies = sum("(summarized twice)" in p for p in problems)
    result.summaries_applied = result.runs_by_status.get("applied", 0)
    result.retries = result.runs_by_status.get("failed", 0)
    result.dead_runs = result.runs_by_status.get("dead", 0)
    return result


def report(cfg: SoakConfig, r: SoakResult) -> str:
    lines = [f"soak: {cfg.sessions} sessions x {cfg.messages} messages, {cfg.workers} "
             f"{cfg.pool} workers x {cfg.concurrency}, fail rate {cfg.fail_rate}, "
             f"permanent {cfg.permanent_rate}, kill every {cfg.kill_every}s, "
             f"redis restart every {cfg.redis_restart_every or '-'} messages, "
             f"lossy rate {cfg.lossy_rate}",
             f"messages written      {r.messages_written}",
             f"messages lost         {r.messages_lost}",
             f"duplicate applies     {r.duplicate_applies}",
             f"summaries applied     {r.summaries_applied}",
             f"retries (failed runs) {r.retries}",
             f"dead runs             {r.dead_runs}",
             f"runs by status        {json.dumps(r.runs_by_status, sort_keys=True)}",
             f"faults injected       {json.dumps(r.injected_faults, sort_keys=True)}",
             f"run errors by kind    {json.dumps(r.errors_by_kind, sort_keys=True)}",
             f"worker kills survived {r.worker_kills}",
             f"redis restarts        {r.redis_restarts} (leases held at the kills: "
             f"{r.leases_at_redis_kill}; worker reconnects: {r.worker_reconnects})",
             f"worker restarts       {r.worker_restarts} (workers that exited by themselves)",
             f"wall time             {r.wall_s}s",
             f"invariant             {'OK' if r.ok else 'VIOLATED'}"]
    return "\n".join(lines + [f"  {p}" for p in r.problems[:50]])


def parse_args(argv: list[str] | None) -> tuple[SoakConfig, argparse.Namespace]:
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n")[0])
    d = SoakConfig()
    p.add_argument("--sessions", type=int, default=d.sessions)
    p.add_argument("--messages", type=int, default=d.messages, help="per session")
    p.add_argument("--workers", type=int, default=d.workers)
    p.add_argument("--concurrency", type=int, default=d.concurrency, help="per worker")
    p.add_argument("--pool", choices=("threads", "prefork"), default=d.pool)
    p.add_argument("--fail-rate", type=float, default=d.fail_rate, help="transient faults")
    p.add_argument("--permanent-rate", type=float, default=d.permanent_rate)
    p.add_argument("--kill-every", type=float, default=d.kill_every, metavar="SECONDS",
                   help="SIGKILL a random worker this often (0: never)")
    p.add_argument("--api-latency", type=float, default=d.api_latency, metavar="SECONDS")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--redis-restart-every", type=int, default=0, metavar="MESSAGES",
                   help="run a redis-server of the soak's own and kill and restart it every "
                        "MESSAGES ingested messages (0: never; --redis is then ignored)")
    p.add_argument("--lossy", action="store_true",
                   help="the fake API answers with NULs, lone surrogates and over-long "
                        "(max_tokens) answers at --lossy-rate")
    p.add_argument("--lossy-rate", type=float, default=0.25, metavar="SHARE")
    p.add_argument("--quick", action="store_true", help="20 sessions x 60 messages")
    p.add_argument("--pg-admin", default=os.environ.get(
        "RECAP_SOAK_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"))
    p.add_argument("--redis", default=os.environ.get("RECAP_SOAK_REDIS",
                                                     "redis://127.0.0.1:6379/12"))
    p.add_argument("--keep-db", action="store_true", help="do not drop the soak database")
    a = p.parse_args(argv)
    if a.quick:
        a.sessions, a.messages = 20, 60
    for name in ("sessions", "messages", "workers", "concurrency"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1")
    if a.redis_restart_every < 0:
        p.error("--redis-restart-every must be >= 0")
    if not 0 <= a.lossy_rate <= 1:
        p.error("--lossy-rate must be between 0 and 1")
    if a.kill_every < 0 or a.api_latency < 0:
        p.error("--kill-every and --api-latency must be >= 0")
    if not (0 <= a.fail_rate + a.permanent_rate <= 1) or a.fail_rate < 0 or a.permanent_rate < 0:
        p.error("--fail-rate and --permanent-rate must be >= 0 and add up to at most 1")
    return SoakConfig(sessions=a.sessions, messages=a.messages, workers=a.workers,
                      concurrency=a.concurrency, pool=a.pool, fail_rate=a.fail_rate,
                      permanent_rate=a.permanent_rate, kill_every=a.kill_every,
                      api_latency=a.api_latency, seed=a.seed,
                      redis_restart_every=a.redis_restart_every,
                      lossy_rate=a.lossy_rate if a.lossy else 0.0), a


def main(argv: list[str] | None = None) -> int:
    cfg, args = parse_args(argv)
    from sqlalchemy import create_engine, text

    run = uuid.uuid4().hex[:8]
    url = args.pg_admin.rsplit("/", 1)[0] + f"/recap_soak_{run}"
    logs = tempfile.TemporaryDirectory(prefix="recap-soak-")
    redis_server = SoakRedis(Path(logs.name) / "redis.log") if cfg.redis_restart_every \
        else None

    # Before `worker` is configured: its app and settings read the environment on first use.
    os.environ.update(SOAK_SETTINGS | {
        "RECAP_ENV": "test", "DATABASE_URL": url,
        "CELERY_BROKER_URL": redis_server.url if redis_server else args.redis,
        "RECAP_QUEUE": f"recap-soak-{run}", "ANTHROPIC_API_KEY": f"sk-ant-soak-{run}"})
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT.parent / "shared" / "tiktoken-cache"))
    admin = create_engine(args.pg_admin, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "recap_soak_{run}"'))
    try:
        if redis_server is not None:
            redis_server.start()
        from alembic import command
        from alembic.config import Config

        alembic_cfg = Config(str(ROOT / "alembic.ini"))
        alembic_cfg.attributes.update(url=url, configure_logger=False)
        command.upgrade(alembic_cfg, "head")
        result = run_soak(cfg, queue=os.environ["RECAP_QUEUE"], log_dir=Path(logs.name),
                          redis_server=redis_server)
        print(report(cfg, result))
        print(json.dumps({"config": asdict(cfg), "result": asdict(result)}, default=str))
    finally:
        from worker.db import reset_engines

        reset_engines()
        if not args.keep_db:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "recap_soak_{run}" WITH (FORCE)'))
        admin.dispose()
        if redis_server is not None:
            redis_server.kill()
        logs.cleanup()
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
