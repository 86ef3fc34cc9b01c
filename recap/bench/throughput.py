"""Benchmark 4: jobs per second at worker concurrency 1, 8, 32 and 64.

A real ``celery -A recap worker -P threads -c N`` process consumes jobs whose one
Claude call takes the stand-in's latency (0.8 s by default), so the ideal rate
is N / latency. Target: at least 85% of ideal at 32.

Why threads and not gevent: a job is one HTTP call plus three short
transactions, so it is I/O bound and the GIL is released while it waits;
threads need no monkey-patching of psycopg (whose C implementation gevent cannot
patch without psycogreen-style wait callbacks) or of the SDK's HTTP client.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from recap.bench.harness import env as benv
from recap.bench.harness.extras import need, pyplot
from recap.bench.harness.stats import report, table

PLOT = "throughput.png"


def _pool_settings() -> tuple[int, int]:
    from recap.db import get_engine

    pool = get_engine().pool
    return getattr(pool, "size", lambda: 0)(), getattr(pool, "_max_overflow", 0)


def measure(concurrency: int, jobs: int, latency: float, pool_size: int | None = None,
            processes: int = 1, profile: str | None = None) -> dict[str, Any]:
    """Seed ``jobs`` sessions needing one job each, start a worker, publish, time to done."""
    from recap.bench.harness.seed import JOB_MESSAGES, bulk_load, job_thresholds
    from recap.bench.harness.workers import LOG_TAILS, count_runs, first_errors, subprocess_worker
    from recap.store.enqueue import SUMMARIZE_TASK
    from recap.worker.celery_app import app

    benv.reset_state()
    # One Claude call per job, as the ideal N / latency assumes: no memory mining
    # (a second call per job) and no title jobs.
    benv.configure(**job_thresholds(), RECAP_EXTRACT_MEMORIES="false",
                   RECAP_TITLES_ENABLED="false")
    ids = [f"tp-{concurrency}-{i}" for i in range(jobs)]
    bulk_load(ids, JOB_MESSAGES)
    with contextlib.ExitStack() as stack:
        procs = [stack.enter_context(subprocess_worker(concurrency // processes,
                                                       pool_size=pool_size, profile=profile))
                 for _ in range(processes)]
        proc = procs[0]
        cpu0 = _cpu(procs)
        started = time.monotonic()
        for sid in ids:
            app.send_task(SUMMARIZE_TASK, (sid,), retry=False)
        done = 0
        deadline = started + 60 + 3 * jobs * latency / concurrency
        while done < jobs and time.monotonic() < deadline:
            time.sleep(0.02)
            done = count_runs("applied")
        elapsed = time.monotonic() - started
        cpu1 = _cpu(procs)
        if done < jobs:
            print("worker log tail:\n" + "".join(LOG_TAILS.get(proc.pid, [])[-15:]))
            print("first errors:", first_errors())
    cpu = cpu1 - cpu0
    pool = f"{pool_size} + 10" if pool_size else "5 + 10"
    return {"concurrency": concurrency if processes == 1 else
            f"{concurrency} ({processes} x {concurrency // processes})",
            "pool": pool if processes == 1 else f"{pool} each",
            "jobs": jobs, "applied": done,
            "failed": count_runs("failed") + count_runs("dead"), "elapsed": elapsed,
            "rate": done / elapsed, "ideal": concurrency / latency, "n": concurrency,
            "cpu_ms_per_job": 1000 * cpu / max(1, done)}


def _cpu(procs: list[Any]) -> float:
    psutil = need("psutil")
    times = [psutil.Process(p.pid).cpu_times() for p in procs]
    return sum(t.user + t.system for t in times)


def plot(results: list[dict[str, Any]], pooled: list[dict[str, Any]],
         split: list[dict[str, Any]], latency: float) -> str:
    """The plot (with --plots), and the line that names it."""
    path = benv.plot_path(PLOT)
    if path is None:
        return ""
    plt = pyplot()
    cs = [r["n"] for r in results]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(cs, [r["ideal"] for r in results], "--", label=f"ideal (N / {latency}s)")
    ax.plot(cs, [r["rate"] for r in results], "o-", label="Recap, threads pool, DB pool 5+10")
    ax.plot([r["n"] for r in pooled], [r["rate"] for r in pooled], "s",
            label="DB pool = concurrency + 10")
    ax.plot([r["n"] for r in split], [r["rate"] for r in split], "^",
            label="2 processes x N/2 threads, pool N/2 + 10 each")
    ax.set_xlabel("worker concurrency (threads)")
    ax.set_ylabel("jobs per second")
    ax.set_xscale("log", base=2)
    ax.set_xticks(cs, [str(c) for c in cs])
    ax.set_title("Throughput with a fixed-latency Claude stand-in")
    ax.legend()
    ax.grid(alpha=0.3)
    return benv.save_plot(fig, path)


def run(quick: bool = False) -> str:
    env = benv.setup()
    waves = 2 if quick else 5
    levels = (8, 32) if quick else (1, 8, 32, 64)  # --quick: the two that matter most
    results = [measure(c, max(10, waves * c), env.latency) for c in levels]
    # The proposed core setting (RECAP_DB_POOL_SIZE): one connection per thread.
    pooled = [] if quick else [measure(c, waves * c, env.latency, pool_size=c)
                               for c in (32, 64)]
    # Two processes share the GIL-bound Python work across both cores.
    split = [] if quick else [measure(c, waves * c, env.latency, pool_size=c // 2, processes=2)
                              for c in (32, 64)]
    size, overflow = _pool_settings()
    rows = [[r["concurrency"], r["pool"], r["jobs"], r["applied"], r["failed"],
             f"{r['elapsed']:.2f}",
             f"{r['rate']:.1f}", f"{r['ideal']:.1f}", f"{r['rate'] / r['ideal']:.0%}",
             f"{r['cpu_ms_per_job']:.1f}"] for r in results + pooled + split]
    return report(f"throughput: jobs/s vs ideal (stand-in latency {env.latency}s, {waves} "
                  f"waves of jobs per run, SQLAlchemy pool {size} + {overflow} overflow per "
                  f"worker process; target >= 85% of ideal at 32)",
                  table(["concurrency", "DB pool", "jobs", "applied", "failed", "seconds", "jobs/s",
                         "ideal jobs/s", "of ideal", "worker CPU ms/job"], rows)
                  + plot(results, pooled, split, env.latency))
