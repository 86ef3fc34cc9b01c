"""Soak run: real worker processes under injected API faults and SIGKILLs.

A producer ingests sessions x messages through ``add_message`` + ``after_reply``,
a killer SIGKILLs a random worker every few seconds and restarts it, the sweeper
runs periodically, and once the queue drains the invariant (tests/checks.py) is
checked. Usage, from the repository root: ``python -m tests.reliability.soak
--quick``. Needs PostgreSQL and Redis.

Two more fault modes: ``--redis-restart-every N`` runs a redis-server of the
soak's own (its own port) and kills and restarts it every N ingested messages
while jobs run (the workers must reconnect by themselves: the soak counts the
worker restarts it had to do); ``--lossy`` makes the fake API return answers
the database cannot store (NULs, lone surrogates, ``"\\u0000"`` escapes in the
extraction JSON) and over-long answers cut off at ``max_tokens``.

``run_soak`` (tests.reliability.soak.run) is the core: it uses whatever database
and broker this process is configured with (settings are read from the
environment), so ``main`` sets the environment before it configures Recap. The
worker subprocesses and the broker helpers are tests/reliability/procs.py's;
tests/reliability/test_soak_quick.py runs tiny soaks in the test suite.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import uuid
from dataclasses import asdict
from pathlib import Path

from tests.reliability.soak.faults import SOAK_SETTINGS, SoakRedis
from tests.reliability.soak.run import SoakConfig, SoakResult, run_soak


def report(cfg: SoakConfig, r: SoakResult) -> str:
    lines = [f"soak: {cfg.sessions} sessions x {cfg.messages} messages, {cfg.workers} "
             f"{cfg.pool} workers x {cfg.concurrency}, fail rate {cfg.fail_rate}, "
             f"permanent {cfg.permanent_rate}, kill every {cfg.kill_every}s, "
             f"redis restart every {cfg.redis_restart_every or '-'} messages, "
             f"lossy rate {cfg.lossy_rate}, lossy specifics {cfg.lossy_specifics}",
             f"messages written      {r.messages_written}",
             f"messages lost         {r.messages_lost}",
             *([f"specifics planted     {r.specifics_planted}",
                f"specifics lost        {r.specifics_lost}",
                f"retention guard       {json.dumps(r.guard, sort_keys=True)}"]
               if cfg.lossy_specifics else []),
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
    p = argparse.ArgumentParser(prog="python -m tests.reliability.soak",
                                description=__doc__.split("\n")[0])
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
    p.add_argument("--lossy-specifics", type=float, default=0.0, metavar="SHARE",
                   help="the fake drops this share of specifics from summaries, facts and "
                        "repair answers; messages carry planted specifics and the retention "
                        "guard must keep every one (specifics lost must be 0)")
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
    if not 0 <= a.lossy_rate <= 1 or not 0 <= a.lossy_specifics <= 1:
        p.error("--lossy-rate and --lossy-specifics must be between 0 and 1")
    if a.kill_every < 0 or a.api_latency < 0:
        p.error("--kill-every and --api-latency must be >= 0")
    if not (0 <= a.fail_rate + a.permanent_rate <= 1) or a.fail_rate < 0 or a.permanent_rate < 0:
        p.error("--fail-rate and --permanent-rate must be >= 0 and add up to at most 1")
    return SoakConfig(sessions=a.sessions, messages=a.messages, workers=a.workers,
                      concurrency=a.concurrency, pool=a.pool, fail_rate=a.fail_rate,
                      permanent_rate=a.permanent_rate, kill_every=a.kill_every,
                      api_latency=a.api_latency, seed=a.seed,
                      redis_restart_every=a.redis_restart_every,
                      lossy_rate=a.lossy_rate if a.lossy else 0.0,
                      lossy_specifics=a.lossy_specifics), a


def main(argv: list[str] | None = None) -> int:
    cfg, args = parse_args(argv)
    from sqlalchemy import create_engine, text

    from recap.paths import checkout_tiktoken_cache

    run = uuid.uuid4().hex[:8]
    url = args.pg_admin.rsplit("/", 1)[0] + f"/recap_soak_{run}"
    logs = tempfile.TemporaryDirectory(prefix="recap-soak-")
    redis_server = SoakRedis(Path(logs.name) / "redis.log") if cfg.redis_restart_every \
        else None

    # Before Recap is configured: its app and settings read the environment on first use.
    os.environ.update(SOAK_SETTINGS | {
        "RECAP_ENV": "test", "DATABASE_URL": url,
        "CELERY_BROKER_URL": redis_server.url if redis_server else args.redis,
        "RECAP_QUEUE": f"recap-soak-{run}", "ANTHROPIC_API_KEY": f"sk-ant-soak-{run}"})
    if not os.environ.get("TIKTOKEN_CACHE_DIR") and (cache := checkout_tiktoken_cache()):
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    admin = create_engine(args.pg_admin, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "recap_soak_{run}"'))
    try:
        if redis_server is not None:
            redis_server.start()
        from alembic import command

        from recap.migrate import alembic_config

        command.upgrade(alembic_config(url), "head")
        result = run_soak(cfg, queue=os.environ["RECAP_QUEUE"], log_dir=Path(logs.name),
                          redis_server=redis_server)
        print(report(cfg, result))
        print(json.dumps({"config": asdict(cfg), "result": asdict(result)}, default=str))
    finally:
        from recap.db import reset_engines

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
