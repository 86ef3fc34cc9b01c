"""Soak run: real worker processes under injected API faults and SIGKILLs.

A producer ingests sessions x messages through ``add_message`` + ``after_reply``,
a killer SIGKILLs a random worker every few seconds and restarts it, the sweeper
runs periodically, and once the queue drains the invariant (worker/checks.py) is
checked. Usage: ``python -m bench.soak --quick``. Needs PostgreSQL and Redis.

``run_soak`` is the core: it uses whatever database and broker this process is
configured with (settings are read from the environment), so ``main`` sets the
environment before it configures ``worker``. The worker subprocesses and the
broker helpers are tests/reliability/procs.py's (run from the repository root,
where ``tests`` is importable).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tests.fake_anthropic import FakeAnthropic, Reply, error
from tests.helpers import wait_for
from tests.reliability.procs import (
    ROOT,
    WorkerProcess,
    activity,
    broker_backlog,
    publishing_to,
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

    def __init__(self, *, fail_rate: float, permanent_rate: float, seed: int) -> None:
        self.fail_rate, self.permanent_rate = fail_rate, permanent_rate
        self._rng = random.Random(seed)
        self.injected = {"transient": 0, "permanent": 0}
        super().__init__()
        # A SIGKILLed worker resets its connections; that is the point, not news.
        self._server.handle_error = lambda *_: None  # type: ignore[method-assign]

    def _next(self) -> Reply:
        with self._lock:
            r, pick = self._rng.random(), self._rng.choice(self.TRANSIENT)
            if r < self.permanent_rate:
                self.injected["permanent"] += 1
                return error(400, "chaos: permanent failure for this request")
            if r < self.permanent_rate + self.fail_rate:
                self.injected["transient"] += 1
                return pick
        return super()._next()


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


@dataclass
class SoakResult:
    messages_written: int = 0
    messages_lost: int = 0
    duplicate_applies: int = 0
    summaries_applied: int = 0
    retries: int = 0
    dead_runs: int = 0
    runs_by_status: dict[str, int] = field(default_factory=dict)
    injected_faults: dict[str, int] = field(default_factory=dict)
    worker_kills: int = 0
    wall_s: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


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
    """No lease held, nothing due or cooling down, and no message of ``queue`` in the
    broker (unacked ones past the visibility timeout are requeued first)."""
    counts = activity()
    return not (counts["leased"] or counts["due"] or counts["blocked"]) \
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


def run_soak(cfg: SoakConfig, *, queue: str, log_dir: Path) -> SoakResult:
    """Run one soak against this process's configured database and broker; never raises
    for invariant violations (they are in ``problems``)."""
    from sqlalchemy import func, select

    from models import SummaryRun
    from worker.api.ingest import add_message, after_reply
    from worker.checks import check_invariants
    from worker.db import transaction
    from worker.jobs.sweeper import sweep
    from worker.settings import get_settings

    rng, killer_rng = random.Random(cfg.seed), random.Random(cfg.seed + 1)
    fake = ChaosFake(fail_rate=cfg.fail_rate, permanent_rate=cfg.permanent_rate,
                     seed=cfg.seed)
    fake.start()
    fake.delay = cfg.api_latency
    env = {**os.environ, "ANTHROPIC_BASE_URL": fake.url}
    workers = [WorkerProcess(f"soak{k}", queue=queue, env=env, log_dir=log_dir, pool=cfg.pool,
                             concurrency=cfg.concurrency) for k in range(cfg.workers)]
    sids = [f"soak-{uuid.uuid4().hex[:8]}-{i}" for i in range(cfg.sessions)]
    written: dict[str, list[int]] = {sid: [] for sid in sids}
    result, errors, sweeps = SoakResult(), list[BaseException](), _Sweeps()
    produced, done = threading.Event(), threading.Event()

    def produce() -> None:
        for m in range(cfg.messages):
            for sid in sids:
                role = "user" if m % 2 == 0 else "assistant"
                written[sid].append(add_message(sid, role, _text(rng, rng.randint(8, 40))))
                if role == "assistant":
                    after_reply(sid)
        produced.set()

    def kill() -> None:
        if cfg.kill_every <= 0:
            return  # --kill-every 0: faults only, no crashes
        while not (produced.wait(cfg.kill_every) and result.worker_kills >= cfg.min_kills):
            if cfg.max_kills is not None and result.worker_kills >= cfg.max_kills:
                return
            victim = killer_rng.choice(workers)
            victim.kill()
            result.worker_kills += 1
            victim.start()

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
            threads = [_guard(errors, f) for f in (produce, kill, sweep_loop)]
            for t in threads:
                t.start()
            threads[0].join()
            produced.set()
            threads[1].join()
            _drain(queue, errors, sweeps, timeout=cfg.drain_timeout, problems=result.problems)
            done.set()
            threads[2].join()
    finally:
        done.set()
        for w in workers:
            w.close()
        fake.stop()
        forget_queue(queue, [node for w in workers for node in w.nodes])
    result.wall_s = round(time.monotonic() - started, 1)
    result.injected_faults = dict(fake.injected)
    result.messages_written = sum(map(len, written.values()))
    with transaction() as s:
        problems = check_invariants(s, written=written, idle=True)
        result.runs_by_status = {st: int(n) for st, n in s.execute(
            select(SummaryRun.status, func.count()).group_by(SummaryRun.status))}
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
             f"permanent {cfg.permanent_rate}, kill every {cfg.kill_every}s",
             f"messages written      {r.messages_written}",
             f"messages lost         {r.messages_lost}",
             f"duplicate applies     {r.duplicate_applies}",
             f"summaries applied     {r.summaries_applied}",
             f"retries (failed runs) {r.retries}",
             f"dead runs             {r.dead_runs}",
             f"runs by status        {json.dumps(r.runs_by_status, sort_keys=True)}",
             f"faults injected       {json.dumps(r.injected_faults, sort_keys=True)}",
             f"worker kills survived {r.worker_kills}",
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
    if a.kill_every < 0 or a.api_latency < 0:
        p.error("--kill-every and --api-latency must be >= 0")
    if not (0 <= a.fail_rate + a.permanent_rate <= 1) or a.fail_rate < 0 or a.permanent_rate < 0:
        p.error("--fail-rate and --permanent-rate must be >= 0 and add up to at most 1")
    return SoakConfig(sessions=a.sessions, messages=a.messages, workers=a.workers,
                      concurrency=a.concurrency, pool=a.pool, fail_rate=a.fail_rate,
                      permanent_rate=a.permanent_rate, kill_every=a.kill_every,
                      api_latency=a.api_latency, seed=a.seed), a


def main(argv: list[str] | None = None) -> int:
    cfg, args = parse_args(argv)
    from sqlalchemy import create_engine, text

    run = uuid.uuid4().hex[:8]
    url = args.pg_admin.rsplit("/", 1)[0] + f"/recap_soak_{run}"
    # Before `worker` is configured: its app and settings read the environment on first use.
    os.environ.update(SOAK_SETTINGS | {
        "RECAP_ENV": "test", "DATABASE_URL": url, "CELERY_BROKER_URL": args.redis,
        "RECAP_QUEUE": f"recap-soak-{run}", "ANTHROPIC_API_KEY": f"sk-ant-soak-{run}"})
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT.parent / "shared" / "tiktoken-cache"))
    admin = create_engine(args.pg_admin, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "recap_soak_{run}"'))
    try:
        from alembic import command
        from alembic.config import Config

        alembic_cfg = Config(str(ROOT / "alembic.ini"))
        alembic_cfg.attributes.update(url=url, configure_logger=False)
        command.upgrade(alembic_cfg, "head")
        with tempfile.TemporaryDirectory(prefix="recap-soak-") as logs:
            result = run_soak(cfg, queue=os.environ["RECAP_QUEUE"], log_dir=Path(logs))
        print(report(cfg, result))
        print(json.dumps({"config": asdict(cfg), "result": asdict(result)}, default=str))
    finally:
        from worker.db import reset_engines

        reset_engines()
        if not args.keep_db:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "recap_soak_{run}" WITH (FORCE)'))
        admin.dispose()
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
