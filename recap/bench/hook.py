"""Benchmark 1: the chat app's reply path cost of Recap.

- p50/p99 of ``add_message`` and ``after_reply`` on PostgreSQL over steady
  conversations (the demo's, ``recap/demo/conversation.json``), with a real in-process Celery
  worker and the stand-in, so jobs run and coalescing is what production sees;
- the hook's own decision (``policy.might_trigger`` on counters), target < 50 us;
- where ``add_message``'s time goes (tokenizing, each SQL statement, commit);
- jobs published per 1,000 replies, target at least 10x fewer jobs than replies;
- the first reply of a fresh process, with and without ``recap.warm_up()``
  (recap/bench/coldstart.py).

Pacing: each session gets one reply (user + assistant message, then the hook)
every ``pace`` seconds, all sessions interleaved. A pace longer than the
stand-in's latency models a human chat (a job finishes before the next reply),
the worst case for coalescing.

``recap bench --only hook [--quick] [--json]``.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import timeit
from collections import defaultdict
from typing import Any

from recap.bench import coldstart
from recap.bench.harness import env as benv
from recap.bench.harness.stats import ms, percentile, report, table


def decision_time(n: int = 200_000) -> tuple[float, float]:
    """Seconds per call: might_trigger alone, and with building Thresholds from settings."""
    from recap.core.planning import policy
    from recap.settings import get_settings

    t = get_settings().thresholds()
    alone = timeit.timeit(lambda: policy.might_trigger(
        message_count=57, active_tokens=24_000, summary_tokens=700, t=t), number=n) / n
    full = timeit.timeit(lambda: policy.might_trigger(
        message_count=57, active_tokens=24_000, summary_tokens=700,
        t=get_settings().thresholds()), number=n) / n
    return alone, full


# add_message on PostgreSQL: session upsert and message INSERT in one statement,
# committed by itself (autocommit), so its time includes the commit's WAL flush.
ADD_STATEMENT = "WITH upserted AS (INSERT chat_sessions ...) INSERT chat_messages (+ commit)"


class SqlTimer:
    """Time per SQL statement kind and per commit, for one thread only."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self.thread = threading.get_ident()
        self._started: dict[int, float] = {}

    @staticmethod
    def kind(statement: str) -> str:
        words = statement.split()
        head = " ".join(words[:3]).upper()
        if head.startswith("WITH UPSERTED AS"):
            return ADD_STATEMENT
        if head.startswith("INSERT INTO CHAT_SESSIONS"):
            return "INSERT chat_sessions ON CONFLICT DO UPDATE (counters)"
        if head.startswith("INSERT INTO CHAT_MESSAGES"):
            return "INSERT chat_messages RETURNING id"
        if head.startswith("UPDATE CHAT_SESSIONS") and "enqueued_at=" in statement:
            return "UPDATE chat_sessions (pending marker)"
        if head.startswith("UPDATE CHAT_SESSIONS"):
            return "UPDATE chat_sessions (counters)"
        if head.startswith("SELECT"):
            return "SELECT counters (hook)"
        return head

    def install(self, engine: Any, factory: Any) -> None:
        from sqlalchemy import event

        def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if threading.get_ident() == self.thread:
                self._started[id(cursor)] = time.perf_counter()

        def after(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            started = self._started.pop(id(cursor), None)
            if started is not None:
                k = self.kind(statement)
                self.totals[k] += time.perf_counter() - started
                self.counts[k] += 1

        def commit_start(conn: Any) -> None:
            if threading.get_ident() == self.thread:
                self._started[-1] = time.perf_counter()

        def commit_end(session: Any) -> None:
            started = self._started.pop(-1, None)
            if started is not None:
                self.totals["COMMIT"] += time.perf_counter() - started
                self.counts["COMMIT"] += 1

        event.listen(engine, "before_cursor_execute", before)
        event.listen(engine, "after_cursor_execute", after)
        event.listen(engine, "commit", commit_start)
        event.listen(factory, "after_commit", commit_end)


class JobCpu:
    """Thread CPU seconds of each summarize job an in-process worker runs: what a job
    takes of this process's interpreter (the GIL) from the replies beside it. Read
    from the thread's own clock, so the machine's load and the waits on PostgreSQL
    and the stand-in do not count."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._started: dict[str, float] = {}

    def prerun(self, task_id: str = "", task: Any = None, **_: Any) -> None:
        if getattr(task, "name", None) == SUMMARIZE_TASK:
            self._started[task_id] = time.thread_time()

    def postrun(self, task_id: str = "", **_: Any) -> None:
        started = self._started.pop(task_id, None)
        if started is not None:
            self.seconds.append(time.thread_time() - started)

    @contextlib.contextmanager
    def installed(self) -> Any:
        from celery.signals import task_postrun, task_prerun

        task_prerun.connect(self.prerun, weak=False)
        task_postrun.connect(self.postrun, weak=False)
        try:
            yield self
        finally:
            task_prerun.disconnect(self.prerun)
            task_postrun.disconnect(self.postrun)


SUMMARIZE_TASK = "recap.tasks.summarize_session"


def drive(*, sessions: int, replies: int, pace: float, worker: bool,
          prefix: str) -> dict[str, Any]:
    """Feed ``sessions`` interleaved conversations of ``replies`` replies each.

    Without ``worker`` nothing consumes the queue, so the timings are the reply
    path alone (no worker threads competing for this process's GIL).
    """
    from celery.signals import after_task_publish

    from recap.api.ingest import add_message, after_reply
    from recap.bench.harness.seed import demo_script
    from recap.bench.harness.workers import count_runs, inprocess_worker, wait_idle
    from recap.db import get_engine, session_factory
    from recap.llm.tokens import count_tokens

    script = demo_script(2 * replies)
    published: list[str] = []

    def on_publish(sender: Any = None, **_: Any) -> None:
        if sender == SUMMARIZE_TASK:
            published.append(sender)

    after_task_publish.connect(on_publish, weak=False)
    timer = SqlTimer()
    timer.install(get_engine(), session_factory())
    add_times: list[float] = []
    hook_times: list[float] = []
    hook_queued: list[float] = []
    reply_times: list[float] = []
    hook_sent = 0
    ids = [f"{prefix}-{i}" for i in range(sessions)]
    jobs = JobCpu()
    try:
        with (inprocess_worker(concurrency=8) if worker else contextlib.nullcontext(),
              jobs.installed()):
            for r in range(replies):
                round_start = time.monotonic()
                for sid in ids:
                    started = time.perf_counter()
                    for role, content in script[2 * r:2 * r + 2]:
                        t0 = time.perf_counter()
                        add_message(sid, role, content)
                        add_times.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    sent = after_reply(sid)
                    elapsed = time.perf_counter() - t0
                    (hook_queued if sent else hook_times).append(elapsed)
                    hook_sent += sent
                    reply_times.append(time.perf_counter() - started)
                time.sleep(max(0.0, pace - (time.monotonic() - round_start)))
            for sid in ids if worker else ():
                wait_idle(sid)
    finally:
        after_task_publish.disconnect(on_publish)
    # Each text plus a space: count_tokens remembers the counts of recent texts.
    tokenize = timeit.timeit(lambda: [count_tokens(c + " ") for _, c in script], number=1)
    return {"add": add_times, "hook": hook_times, "hook_queued": hook_queued,
            "reply": reply_times, "published": len(published), "hook_sent": hook_sent,
            "applied": count_runs("applied"), "skipped": count_runs("skipped"),
            "replies": sessions * replies,
            "messages": 2 * sessions * replies, "tokenize_per_msg": tokenize / len(script),
            "sql": dict(timer.totals), "sql_counts": dict(timer.counts),
            "job_cpu": jobs.seconds}


def _latency_rows(d: dict[str, Any], label: str) -> list[list[object]]:
    return [[label, name, len(v), ms(percentile(v, 50)), ms(percentile(v, 99)),
             ms(max(v) if v else float("nan"))]
            for name, v in (("add_message", d["add"]),
                            ("after_reply (no job queued)", d["hook"]),
                            ("after_reply (queued a job)", d["hook_queued"]),
                            ("one reply: 2 x add_message + after_reply", d["reply"]),
                            (JOB_CPU_CALL, d["job_cpu"])) if v or name != JOB_CPU_CALL]


# A row of the worker phase: CPU, not wall-clock, seconds (the thread's own clock).
JOB_CPU_CALL = "worker CPU per job (thread CPU time)"


def _breakdown(d: dict[str, Any]) -> list[list[str]]:
    n_add = len(d["add"])
    mean_add = sum(d["add"]) / n_add
    parts: list[list[Any]] = [["tokenize (tiktoken count_tokens)", d["tokenize_per_msg"]]]
    for kind in (ADD_STATEMENT, "INSERT chat_sessions ON CONFLICT DO UPDATE (counters)",
                 "INSERT chat_messages RETURNING id"):
        if kind in d["sql"]:
            parts.append([kind, d["sql"][kind] / n_add])
    if ADD_STATEMENT not in d["sql"]:  # two statements in a transaction, then COMMIT
        parts.append(["COMMIT (WAL flush)", d["sql"]["COMMIT"] / d["sql_counts"]["COMMIT"]])
    rest = max(0.0, mean_add - sum(p[1] for p in parts))
    parts.append(["rest (pool checkout, execution context, Python)", rest])
    parts.append(["add_message mean", mean_add])
    return [[name, f"{sec * 1000:.3f}", f"{sec / mean_add:.0%}"] for name, sec in parts]


def figures(table_rows: list[list[object]]) -> dict[str, float]:
    """Machine-readable figures (``--json``): p50 ms per call and phase, named as
    the lab's ``python -m bench --compare`` names them from a printed table."""
    return {f"{row[1]} [{row[0]}] p50 ms": float(str(row[3])) for row in table_rows
            if str(row[3]) != "n/a"}


# RECAP_BENCH_TINY=1: two sessions of three replies, the reply path alone (no
# worker phase): a smoke run that keeps the lab's ``python -m bench --compare`` working.
TINY = (2, 3)


def run(quick: bool = False, *, as_json: bool = False) -> str:
    env = benv.setup()
    benv.reset_state()
    tiny = os.environ.get("RECAP_BENCH_TINY") == "1"
    sessions, replies = TINY if tiny else (5, 30) if quick else (10, 100)
    pace = 0.3 if quick else env.latency + 0.2
    idle = drive(sessions=sessions, replies=replies, pace=0.0, worker=False, prefix="alone")
    if as_json:
        rows = _latency_rows(idle, "alone (no worker in this process)")
        if not tiny:
            benv.reset_state()
            busy = drive(sessions=sessions, replies=replies, pace=pace, worker=True,
                         prefix="steady")
            rows += _latency_rows(busy, f"with in-process worker (8 threads), one reply per "
                                        f"session every {pace:.2f}s")
        line = json.dumps({"benchmark": "hook", "figures": figures(rows)})
        print(line, flush=True)
        return line + "\n"
    alone, full = decision_time(50_000 if quick else 200_000)
    benv.reset_state()
    busy = drive(sessions=sessions, replies=replies, pace=pace, worker=True, prefix="steady")
    out = [report(
        f"hook: reply-path latency on PostgreSQL ({sessions} sessions x {replies} replies)",
        table(["phase", "call", "n", "p50 ms", "p99 ms", "max ms"],
              _latency_rows(idle, "alone (no worker in this process)")
              + _latency_rows(busy, f"with in-process worker (8 threads), one reply per "
                                    f"session every {pace:.2f}s")))]
    out.append(report("hook: decision time (policy.might_trigger on counters; target < 50 us)",
                      table(["what", "us per call"],
                            [["might_trigger", f"{alone * 1e6:.2f}"],
                             ["get_settings().thresholds() + might_trigger",
                              f"{full * 1e6:.2f}"]])))
    out.append(report("hook: where add_message's time goes (phase alone, mean per call)",
                      table(["part", "ms", "share"], _breakdown(idle))))
    d = busy
    per_k = 1000 * d["published"] / d["replies"]
    applied_k = 1000 * d["applied"] / d["replies"]
    out.append(report(
        f"hook: jobs per 1,000 replies (target: >= 10x fewer jobs than replies; stand-in "
        f"latency {env.latency}s)",
        table(["replies", "hook queued", "follow-ups", "published", "applied", "skipped (no-op)",
               "published per 1,000 replies", "applied per 1,000 replies"],
              [[d["replies"], d["hook_sent"], d["published"] - d["hook_sent"], d["published"],
                d["applied"], d["skipped"],
                f"{per_k:.1f} ({d['replies'] / max(1, d['published']):.1f}x fewer)",
                f"{applied_k:.1f} ({d['replies'] / max(1, d['applied']):.1f}x fewer)"]])))
    # The figures above are of a warm process; a process's first reply is coldstart's.
    out.append(coldstart.run(quick))
    return "".join(out)

