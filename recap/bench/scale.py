"""Benchmark 7: worker overhead and the sweeper's query as stored messages grow 100x.

10,000 background sessions hold 1 or 100 messages each (10k vs 1M messages;
--quick: 10 per session, 100k), bulk-loaded with COPY, counters exact. 100 hot
sessions (131 messages each) need one job; the background ones are below every
threshold. Measured: a job's claim + apply with a zero-latency summarizer
(bench/overhead.py) on the hot sessions, and ``recap.sweeper.due_query`` (the
sweeper's one query, LIMIT RECAP_SWEEP_BATCH). Target: within 1.5x.
"""

from __future__ import annotations

import time
from typing import Any

from recap.bench.harness import env as benv
from recap.bench.harness.stats import ms, percentile, report, table

BACKGROUND = 10_000
HOT = 100
HOT_MESSAGES = 131


def measure(per_session: int) -> dict[str, Any]:
    from sqlalchemy import func, select

    from recap.bench.harness.seed import bulk_load, filler
    from recap.bench.overhead import time_jobs
    from recap.db import transaction, utcnow
    from recap.llm.tokens import count_tokens
    from recap.models import ChatMessage
    from recap.settings import get_settings
    from recap.worker.jobs.sweeper import due_query

    benv.reset_state()
    benv.configure(RECAP_POLICY="threshold", RECAP_TRIGGER_MESSAGES=120,
                   RECAP_TRIGGER_TOKENS=10 * count_tokens(filler(0, 60)), RECAP_BATCH_SIZE=20,
                   RECAP_KEEP_RECENT=10)
    t0 = time.monotonic()
    bulk_load([f"bg-{i}" for i in range(BACKGROUND)], per_session, words=20)
    hot = [f"hot-{i}" for i in range(HOT)]
    bulk_load(hot, HOT_MESSAGES)
    load_s = time.monotonic() - t0
    settings = get_settings()
    sweeps: list[float] = []
    with transaction() as s:
        stored = s.scalar(select(func.count()).select_from(ChatMessage))
        due = list(s.scalars(due_query(settings, now=utcnow(), limit=settings.sweep_batch)))
        for _ in range(30):
            t = time.perf_counter()
            s.execute(due_query(settings, now=utcnow(), limit=settings.sweep_batch)).all()
            sweeps.append(time.perf_counter() - t)
    if sorted(due) != sorted(hot):
        raise RuntimeError(f"expected the {HOT} hot sessions to be due, got {len(due)}")
    jobs = time_jobs(hot)
    return {"stored": stored, "load_s": load_s, "sweep": sweeps, "job": jobs["total"],
            "claim": jobs["claim"], "apply": jobs["apply"]}


def run(quick: bool = False) -> str:
    benv.setup()
    small, big = measure(1), measure(10 if quick else 100)
    rows = []
    for key, label in (("job", "job: claim + apply (p50 / p95 ms)"),
                       ("claim", "claim (p50 / p95 ms)"), ("apply", "apply (p50 / p95 ms)"),
                       ("sweep", "sweeper due_query (p50 / p95 ms)")):
        a, b = small[key], big[key]
        rows.append([label, f"{ms(percentile(a, 50))} / {ms(percentile(a, 95))}",
                     f"{ms(percentile(b, 50))} / {ms(percentile(b, 95))}",
                     f"{percentile(b, 50) / percentile(a, 50):.2f}x"])
    return report(f"scale: {small['stored']:,} vs {big['stored']:,} stored messages across "
                  f"{BACKGROUND:,} + {HOT} sessions (target: within 1.5x; bulk load took "
                  f"{small['load_s']:.0f}s and {big['load_s']:.0f}s)",
                  table(["measure", f"{small['stored']:,} messages",
                         f"{big['stored']:,} messages", "ratio (p50)"], rows))
