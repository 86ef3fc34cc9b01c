"""The soak's core: ``run_soak`` ingests, kills, restarts and drains, then checks the
invariant; configuration and result types."""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers import wait_for
from tests.reliability.procs import (
    WorkerProcess,
    activity,
    broker_backlog,
    publishing_to,
)
from tests.reliability.soak.faults import (
    WORDS,
    ChaosFake,
    SoakRedis,
    forget_broker_connections,
    forget_queue,
)
from tests.reliability.soak.guard import guard_counts, planted, specifics_figures


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
    # Share of specifics the fake drops from summaries, facts and repairs (the
    # retention guard's soak: messages carry planted specifics, and the invariant
    # checks every one of them); 0: off.
    lossy_specifics: float = 0.0


@dataclass
class SoakResult:
    messages_written: int = 0
    messages_lost: int = 0
    specifics_planted: int = 0  # lossy_specifics only
    specifics_lost: int = 0
    guard: dict[str, int] = field(default_factory=dict)  # summed summary_runs counts
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


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + f" ({rng.randrange(10**6)})."


def _guard(errors: list[BaseException], target: Callable[[], object]) -> threading.Thread:
    def run() -> None:
        try:
            target()
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

    from recap.api.ingest import add_message, after_reply
    from recap.db import transaction
    from recap.models import SummaryRun
    from recap.settings import get_settings
    from recap.worker.jobs.sweeper import sweep
    from tests.checks import check_invariants

    if cfg.redis_restart_every and redis_server is None:
        raise ValueError("redis_restart_every needs the soak's own redis_server")
    rng, killer_rng = random.Random(cfg.seed), random.Random(cfg.seed + 1)
    fake = ChaosFake(fail_rate=cfg.fail_rate, permanent_rate=cfg.permanent_rate,
                     seed=cfg.seed, lossy_rate=cfg.lossy_rate)
    fake.start()
    fake.delay = cfg.api_latency
    env = {**os.environ, "ANTHROPIC_BASE_URL": fake.url}
    plant = random.Random(cfg.seed + 2)
    if cfg.lossy_specifics:
        fake.lose_specifics(cfg.lossy_specifics, seed=cfg.seed)
        env["RECAP_RETENTION_GUARD"] = "true"
    workers = [WorkerProcess(f"soak{k}", queue=queue, env=env, log_dir=log_dir, pool=cfg.pool,
                             concurrency=cfg.concurrency) for k in range(cfg.workers)]
    sids = [f"soak-{uuid.uuid4().hex[:8]}-{i}" for i in range(cfg.sessions)]
    written: dict[str, list[int]] = {sid: [] for sid in sids}
    texts: dict[str, dict[int, str]] = {sid: {} for sid in sids}
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
                text = _text(rng, rng.randint(8, 40))
                if cfg.lossy_specifics:
                    text += planted(plant)
                written[sid].append(add_message(sid, role, text))
                texts[sid][written[sid][-1]] = text
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
        problems = check_invariants(s, written=written, idle=True,
                                    written_texts=texts if cfg.lossy_specifics else None)
        result.runs_by_status = {st: int(n) for st, n in s.execute(
            select(SummaryRun.status, func.count()).group_by(SummaryRun.status))}
        result.guard = guard_counts(s)
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
    if cfg.lossy_specifics:
        result.specifics_planted, result.specifics_lost = specifics_figures(texts, problems)
    result.summaries_applied = result.runs_by_status.get("applied", 0)
    result.retries = result.runs_by_status.get("failed", 0)
    result.dead_runs = result.runs_by_status.get("dead", 0)
    return result

