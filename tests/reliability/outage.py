"""``python -m tests.reliability.outage [--replies N] [--sessions K] [--rate R]``: the
reply path while the broker is down (run from the repository root).

A private PostgreSQL database (dropped after) and a broker URL on a port where
nothing listens (connection refused at once, as when Redis is down). K sessions
sit over their thresholds, so every ``after_reply`` decides to publish; N replies
go round-robin at R per second and each ``after_reply`` is timed. Prints p50/p99/max and how many
calls raised (the hook promises never to). The same script runs on the code
before the fix (``recap.ingest``) to give the "before" figure. No Claude call
is made: the broker is down, so no job ever runs.
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from typing import Any

from recap.bench.harness.env import PG_ADMIN, admin, free_port, migrate
from recap.bench.harness.stats import ms, percentile, table


def hook() -> tuple[Any, Any]:
    """(add_message, after_reply) from whichever layout this checkout has."""
    try:
        from recap.api.ingest import add_message, after_reply
    except ImportError:  # the layout before the redesign
        from recap.ingest import add_message, after_reply  # type: ignore[no-redef]
    return add_message, after_reply


def run(replies: int, sessions: int, rate: float) -> dict[str, float]:
    add_message, after_reply = hook()
    ids = [f"outage-{i}" for i in range(sessions)]
    for sid in ids:
        for i in range(12):  # over the thresholds set in main()
            add_message(sid, "user" if i % 2 == 0 else "assistant",
                        f"message {i} about the invoice service and its 502s, again")
    times: list[float] = []
    raised = 0
    start = time.perf_counter()
    for n in range(replies):
        if rate:  # paced like a chat app's traffic, so the run outlasts publish pauses
            time.sleep(max(0.0, start + n / rate - time.perf_counter()))
        sid = ids[n % len(ids)]
        add_message(sid, "assistant", f"reply {n}")
        started = time.perf_counter()
        try:
            after_reply(sid)
        except Exception:
            raised += 1
        times.append(time.perf_counter() - started)
    return {"p50": percentile(times, 50), "p99": percentile(times, 99), "max": max(times),
            "mean": sum(times) / len(times), "raised": raised, "replies": replies}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reliability.outage",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=500)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--no-pause", action="store_true",
                        help="disable the publish pause: measure the fail-fast publish alone")
    parser.add_argument("--rate", type=float, default=50.0,
                        help="replies per second (0: as fast as possible)")
    args = parser.parse_args(argv)
    db = f"recap_outage_{uuid.uuid4().hex[:8]}"
    url = PG_ADMIN.rsplit("/", 1)[0] + "/" + db
    os.environ.update({
        "RECAP_ENV": "test", "DATABASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-bench-unused",
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0",
        "RECAP_POLICY": "threshold", "RECAP_TRIGGER_MESSAGES": "10",
        "RECAP_TRIGGER_TOKENS": "100",
        "RECAP_BATCH_SIZE": "5", "RECAP_KEEP_RECENT": "4", "RECAP_TITLES_ENABLED": "false"})
    admin(f'CREATE DATABASE "{db}"')
    if args.no_pause:
        from recap.store.enqueue import BREAKER

        BREAKER.pause_s = 0.0
    try:
        migrate(url)
        figures = run(args.replies, args.sessions, args.rate)
    finally:
        from recap.db import reset_engines

        reset_engines()
        admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    print(table(["replies", "after_reply p50 ms", "p99 ms", "max ms", "mean ms", "raised"],
                [[figures["replies"], ms(figures["p50"]), ms(figures["p99"]),
                  ms(figures["max"]), ms(figures["mean"]), int(figures["raised"])]]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
