"""Benchmark 3: worker time per job excluding the LLM call, on PostgreSQL.

Each job is ``claim_session`` (lease + batch read + plan), a zero-latency stub
summarizer, then ``apply_summary`` (summary write, fenced delete of the batch,
run row), called directly, so the figure is Recap's own cost: no Celery, no
HTTP. Sessions hold 31 messages of ~80 tokens: one job condenses 20. Target p50 < 15 ms.
A last table runs the whole job as a worker does (recap.worker.jobs.summarize, the
stand-in answering at once). Each row also gives the job's CPU time (the thread's
own clock): what a job takes from replies sharing its process (an in-process worker).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from recap.bench.harness import env as benv
from recap.bench.harness.stats import ms, percentile, report, table


class StubSummarizer:
    """A zero-latency Summarizer: a short digest, token counts from the text size."""

    model = "bench-stub"

    def summarize(self, previous: str | None, turns: Sequence[Any], *,
                  usage: Any = None, **_: Any) -> Any:
        from recap.llm.summarizer import SummaryResult

        text = (previous or "") + "\n" + " ".join(t.content.split()[0] for t in turns)
        return SummaryResult(text=text.strip()[-3000:], model=self.model,
                             input_tokens=sum(len(t.content) for t in turns) // 4,
                             output_tokens=len(text) // 4, calls=1)

    def repair(self, summary: str, items: Sequence[str], *, usage: Any) -> str | None:
        return None  # never asked: the benchmark folds with fold_of, no guard


def time_jobs(session_ids: Sequence[str]) -> dict[str, list[float]]:
    """Run one job per session; seconds per phase."""
    from recap.settings import get_settings
    from recap.worker.jobs.apply import apply_summary
    from recap.worker.jobs.claim import Claim, claim_session
    from recap.worker.jobs.outcome import Job
    from recap.worker.jobs.resources import Resources
    from recap.worker.jobs.retain import fold_of

    stub = StubSummarizer()
    res = Resources(get_settings(), stub)
    times: dict[str, list[float]] = {"claim": [], "llm (stub)": [], "apply": [], "total": [],
                                     CPU: []}
    for sid in session_ids:
        job = Job(task_id=f"bench-{sid}")
        cpu = time.thread_time()
        t0 = time.perf_counter()
        claim = claim_session(sid, job=job, res=res)
        t1 = time.perf_counter()
        if not isinstance(claim, Claim):
            raise RuntimeError(f"session {sid} did not need a job: {claim.reason}")
        result = stub.summarize(claim.previous_summary, claim.turns)
        t2 = time.perf_counter()
        outcome = apply_summary(claim, fold_of(claim, result), job=job, latency_ms=0)
        t3 = time.perf_counter()
        times[CPU].append(time.thread_time() - cpu)
        if outcome.status != "applied" or outcome.more_work:
            raise RuntimeError(f"unexpected outcome for {sid}: {outcome.as_dict()}")
        for key, value in (("claim", t1 - t0), ("llm (stub)", t2 - t1), ("apply", t3 - t2),
                           ("total", t3 - t0)):
            times[key].append(value)
    return times


# The row of a job's CPU: the thread's own clock, which neither the machine's load
# nor the waits on PostgreSQL and the stand-in move.
CPU = "worker CPU (thread CPU time)"


def time_whole_jobs(session_ids: Sequence[str]) -> dict[str, list[float]]:
    """Run one whole job per session as a worker does (recap.worker.jobs.summarize:
    clear, claim, render, the Claude summarizer against the stand-in answering at
    once, the retention guard, apply); wall and thread CPU seconds per job."""
    from recap.worker.jobs.outcome import Job
    from recap.worker.jobs.resources import get_resources
    from recap.worker.jobs.summarize import summarize

    res = get_resources()
    times: dict[str, list[float]] = {"total": [], CPU: []}
    for sid in session_ids:
        cpu, t0 = time.thread_time(), time.perf_counter()
        outcome = summarize(sid, job=Job(task_id=f"bench-whole-{sid}"), res=res)
        times["total"].append(time.perf_counter() - t0)
        times[CPU].append(time.thread_time() - cpu)
        if outcome.status != "applied":
            raise RuntimeError(f"unexpected outcome for {sid}: {outcome.as_dict()}")
    return times


def summary_rows(times: dict[str, list[float]], label: str = "") -> list[list[object]]:
    return [([label] if label else []) + [k, len(v), ms(percentile(v, 50)),
                                          ms(percentile(v, 95)), ms(percentile(v, 99))]
            for k, v in times.items()]


def _count_statements(engine: Any) -> list[int]:
    from sqlalchemy import event

    counter = [0]

    def bump(*_: Any) -> None:
        counter[0] += 1

    event.listen(engine, "before_cursor_execute", bump)
    return counter


def run(quick: bool = False) -> str:
    from recap.bench.harness.seed import JOB_MESSAGES, bulk_load, job_thresholds
    from recap.db import get_engine

    env = benv.setup()
    benv.reset_state()
    benv.configure(**job_thresholds())
    n = 100 if quick else 500
    ids = [f"ovh-{i}" for i in range(3 * n)]
    bulk_load(ids, JOB_MESSAGES)
    engine = get_engine()
    statements = _count_statements(engine)
    times = time_jobs(ids[:n])
    per_job = statements[0] / n
    fake = env.fake
    delay, fake.delay = fake.delay, 0.0
    try:
        whole = time_whole_jobs(ids[2 * n:])
    finally:
        fake.delay = delay
    # What it replaced: pool_pre_ping (one SELECT 1 round trip per pool checkout,
    # three checkouts per job) instead of recap.db's closed-socket check.
    pool: Any = engine.pool
    pool._pre_ping = True
    try:
        pinged = time_jobs(ids[n:2 * n])
    finally:
        pool._pre_ping = False
    return report(f"overhead: worker time per job without the LLM call ({n} jobs per row, "
                  f"{JOB_MESSAGES} messages per session, batch 20; {per_job:.0f} SQL "
                  f"statements + 2 commits per job; target p50 < 15 ms)",
                  table(["pool", "phase", "n", "p50 ms", "p95 ms", "p99 ms"],
                        summary_rows(times, "as shipped (socket check)")
                        + summary_rows(pinged, "pool_pre_ping (before)"))
                  + "\n\nThe whole job, as a worker runs it (clear, claim, render, the "
                  "summary call to the stand-in answering at once, the retention guard, "
                  "apply):\n\n"
                  + table(["pool", "phase", "n", "p50 ms", "p95 ms", "p99 ms"],
                          summary_rows(whole, "whole job (summarize)")))
