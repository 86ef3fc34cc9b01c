"""Benchmark 2: how long a chat reply waits on summarization, p50/p99.

Same conversation (the first 500 demo messages), same stand-in latency:
- Recap: what the chat app calls per reply (``add_message`` for the user and the
  assistant message, then ``after_reply``); summaries run on a separate
  ``celery worker`` process, as deployed;
- LangMem ``summarize_messages`` and LangChain's ``SummarizationMiddleware``
  inline before each model call (recap/evals/peers.py): when they summarize, the
  reply waits for Claude.
"""

from __future__ import annotations

import time

from recap.bench.harness import env as benv
from recap.bench.harness.extras import peers
from recap.bench.harness.stats import ms, percentile, report, table


def recap_waits(n: int) -> tuple[list[float], list[float]]:
    """(per reply: 2 x add_message + after_reply, per reply: after_reply alone)."""
    from recap.api.ingest import add_message, after_reply
    from recap.bench.harness.seed import demo_script
    from recap.bench.harness.workers import subprocess_worker, wait_idle

    benv.reset_state()
    full: list[float] = []
    hook: list[float] = []
    with subprocess_worker(4):
        started = 0.0
        for role, content in demo_script(n):
            if role == "user":
                started = time.perf_counter()
            add_message("reply-path", role, content)
            if role == "assistant":
                t0 = time.perf_counter()
                after_reply("reply-path")
                now = time.perf_counter()
                hook.append(now - t0)
                full.append(now - started)
        wait_idle("reply-path")
    return full, hook


def run(quick: bool = False) -> str:
    from recap.bench.harness.seed import demo_script
    from recap.evals.peers import AS_DOCUMENTED, PEERS

    peers()
    env = benv.setup()
    n = 160 if quick else 500
    full, hook = recap_waits(n)
    rows: list[list[object]] = []
    for name, v in (("Recap: 2 x add_message + after_reply", full),
                    ("Recap: after_reply (the hook) alone", hook)):
        rows.append([name, len(v), ms(percentile(v, 50)), ms(percentile(v, 99)), ms(max(v)),
                     0, ""])
    script = demo_script(n)
    errors = []
    for peer in (*PEERS, AS_DOCUMENTED):
        env.fake.reset()
        env.fake.delay = env.latency
        result = peer(script, env.fake.url)
        v = result.waits
        rows.append([result.name, len(v), ms(percentile(v, 50)), ms(percentile(v, 99)),
                     ms(max(v)) if v else "n/a", result.calls,
                     "failed" if result.error else ""])
        if result.error:
            errors.append(f"{result.name}, after {len(v)} model calls: {result.error}")
    return report(f"reply_path: time a reply waits on summarization over {n} messages "
                  f"(stand-in latency {env.latency}s)",
                  table(["system", "replies", "p50 ms", "p99 ms", "max ms",
                         "inline summarizations", "status"], rows)
                  + ("\n\nErrors: " + "; ".join(errors) if errors else ""))
