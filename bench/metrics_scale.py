"""How long a ``recap metrics`` scrape takes at scale.

``python -m bench.metrics_scale [--messages N] [--sessions N] [--runs N] [--repeat N]``

Creates a private PostgreSQL database (recap_bench_metrics_<hex>, dropped at the
end), migrates it, and seeds it with INSERT ... SELECT generate_series (seconds,
not minutes): ``--messages`` chat_messages rows (default 1,000,000) spread evenly
over ``--sessions`` sessions (default 20,000) whose counters match them, and
``--runs`` summary_runs rows (default 200,000; one a second, so the newest 1,800
are "recent" for the exporter's ledger) across statuses and reason classes. A
mix of sessions is due, pending, leased, dead-lettered, escalated, over budget or
tuned with overrides (1 in 100), so every query does real work. After VACUUM
ANALYZE (what autovacuum leaves in steady state), it times ``--repeat`` runs of:
a new exporter's first scrape, each query on its own, and the steady-state scrape
as Prometheus gets it (collector + text format). Prints a Markdown table; no
assertions.
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from collections.abc import Callable

from recap.bench.harness.env import PG_ADMIN, admin, migrate, use_offline_encodings
from recap.bench.harness.stats import ms, percentile, table, timed

SEED_SQL = (
    # Sessions first (chat_messages references them). Every 10th is at 85% of the
    # 32,000-token budget (due by capacity), every 50th over it; others are
    # pending, leased, dead-lettered, escalated or tuned on their own.
    """
    INSERT INTO chat_sessions (id, message_count, active_tokens, summary_tokens,
                               summary_version, enqueued_at, lease_token, lease_expires_at,
                               blocked_until, needs_escalation, overrides, updated_at)
    SELECT 's-' || g, :per, :per * 20,
           CASE WHEN g % 50 = 0 THEN 33000 WHEN g % 10 = 0 THEN 27200 ELSE 0 END,
           g % 5,
           CASE WHEN g % 13 = 0 THEN now() - interval '30 seconds' END,
           CASE WHEN g % 17 = 0 THEN 'lease-' || g END,
           CASE WHEN g % 17 = 0 THEN now() + interval '5 minutes' END,
           CASE WHEN g % 19 = 0 THEN now() + interval '1 hour' END,
           g % 23 = 0,
           CASE WHEN g % 100 = 1 THEN
                CAST('{"trigger_messages": 12, "trigger_tokens": 100, "keep_recent": 4}'
                     AS json) END,
           now() - (g % 3600) * interval '1 second'
    FROM generate_series(0, :sessions - 1) AS g
    """,
    """
    INSERT INTO chat_messages (session_id, role, content, token_count)
    SELECT 's-' || (g % :sessions), CASE WHEN g % 2 = 0 THEN 'user' ELSE 'assistant' END,
           'message ' || g || ' about latency, invoices and the deploy on Friday', 20
    FROM generate_series(0, :messages - 1) AS g
    """,
    """
    INSERT INTO summary_runs (session_id, task_id, status, reason, messages_condensed,
                              input_tokens, output_tokens, latency_ms, created_at)
    SELECT 's-' || (g % :sessions), 'task-' || g,
           (ARRAY['applied', 'applied', 'applied', 'skipped', 'skipped', 'failed',
                  'superseded', 'dead'])[g % 8 + 1],
           (ARRAY['normal: 31 messages > 30 and batch 15200 tokens > 15000',
                  'capacity: context at 86% of the 32000-token budget',
                  'aggressive: context at 97% of the 32000-token budget',
                  'lease held by another job',
                  'below thresholds: 12 messages, batch 200 tokens, context at 1% of the '
                  || '32000-token budget',
                  'normal: 40 messages > 30 and batch 16000 tokens > 15000',
                  'the lease or summary version changed during the call',
                  'worker lost 4 times in a row while holding this session''s lease; '
                  || 'dead-lettered (recap retry after fixing the cause)'])[g % 8 + 1],
           CASE WHEN g % 8 < 3 THEN 20 ELSE 0 END,
           CASE WHEN g % 8 IN (3, 4) THEN NULL ELSE 9000 + g % 1000 END,
           CASE WHEN g % 8 IN (3, 4) THEN NULL ELSE 600 + g % 100 END,
           1000 + g % 2000,
           now() - (:runs - g) * interval '1 second'
    FROM generate_series(0, :runs - 1) AS g
    """,
    "INSERT INTO heartbeats (name, at) VALUES ('sweep', now())",
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.metrics_scale",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    if args.messages % args.sessions:
        parser.error("--messages must be a multiple of --sessions (counters stay exact)")

    name = f"recap_bench_metrics_{uuid.uuid4().hex[:8]}"
    url = PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    os.environ.update({"RECAP_ENV": "test", "DATABASE_URL": url})
    use_offline_encodings()
    admin(f'CREATE DATABASE "{name}"')
    try:
        migrate(url)
        run(args)
    finally:
        from recap.db import reset_engines

        reset_engines()
        admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run(args: argparse.Namespace) -> None:
    from prometheus_client import CollectorRegistry, generate_latest
    from sqlalchemy import func, select, text

    from recap.db import get_engine, transaction, utcnow
    from recap.models import ChatMessage, SummaryRun
    from recap.ops import metrics
    from recap.ops.exporter import RecapCollector
    from recap.settings import get_settings

    params = {"sessions": args.sessions, "messages": args.messages, "runs": args.runs,
              "per": args.messages // args.sessions}
    t0 = time.monotonic()
    with transaction() as s:
        for sql in SEED_SQL:
            s.execute(text(sql), {k: v for k, v in params.items() if f":{k}" in sql})
    with get_engine().connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
    seeded_s = time.monotonic() - t0
    with transaction() as s:
        messages = s.scalar(select(func.count()).select_from(ChatMessage))
        runs = s.scalar(select(func.count()).select_from(SummaryRun))

    settings = get_settings()
    snap = metrics.Snapshot(now=utcnow())

    def part(fn: Callable[..., object]) -> Callable[[], object]:
        def call() -> object:
            with transaction() as s:
                return fn(snap, db=s, settings=settings)
        return call

    def snapshot(ledger: metrics.RunLedger | None = None) -> metrics.Snapshot:
        with transaction() as s:
            return metrics.snapshot(db=s, settings=settings, now=utcnow(), ledger=ledger)

    ledger = metrics.RunLedger()

    def ledger_read() -> object:
        with transaction() as s:
            return ledger.read(db=s, now=utcnow())

    def runs_full() -> object:
        with transaction() as s:
            return metrics.run_totals(db=s)

    def first_scrape() -> bytes:
        registry = CollectorRegistry()  # a new exporter: its ledger reads every run once
        registry.register(RecapCollector())
        return generate_latest(registry)

    registry = CollectorRegistry()
    registry.register(RecapCollector())
    rows = []
    for label, fn, warm in (
            ("first scrape of a new exporter (all summary_runs once)", first_scrape, False),
            ("summary_runs, full aggregate (what the ledger avoids)", runs_full, True),
            ("summary_runs via the ledger (recent rows only)", ledger_read, True),
            ("chat_sessions pass (counters, due, lag)", part(metrics.session_figures), True),
            ("override sessions (paged, judged in Python)", part(metrics.override_figures),
             True),
            ("scrape (collector + exposition), steady state",
             lambda: generate_latest(registry), True)):
        # warm: the first run pays for connections, cold caches and the ledger's first read
        times = timed(fn, args.repeat, warm=1 if warm else 0)
        rows.append([label, ms(percentile(times, 50)), ms(max(times))])
    final = snapshot(ledger)
    recent = sum(r.runs for r in final.runs) - sum(r.runs for r in ledger.settled.values())
    print(f"\n### recap metrics scrape: {messages:,} messages, {args.sessions:,} sessions, "
          f"{runs:,} summary_runs of which {recent:,} recent (seeded + VACUUM ANALYZE in "
          f"{seeded_s:.0f}s; {args.repeat} timed runs each, after one warm-up)\n")
    print(table(["part", "p50 (ms)", "max (ms)"], rows))
    print(f"\nfigures: due {final.due}, pending {final.pending}, leased {final.leased}, "
          f"dead {final.dead}, over budget {final.over_budget}, escalated {final.escalated}, "
          f"runs classes {len(final.runs)}", flush=True)


if __name__ == "__main__":
    main()
