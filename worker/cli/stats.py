"""``recap stats [--json]``: sessions, summaries, failures, latency and API usage.

Token counts are tiktoken estimates unless labelled "API" (what the Messages
API billed).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from worker.cli.base import Subparsers, command, emit_json

STATS_LABELS = {
    "sessions": "sessions",
    "active_messages": "active messages",
    "active_tokens": "active tokens (est.)",
    "summary_tokens": "summary tokens (est.)",
    "summaries_applied": "summaries applied",
    "messages_condensed": "messages condensed",
    "tokens_saved": "context tokens saved (est.)",
    "failed_runs": "failed runs",
    "dead_runs": "dead runs",
    "latency_p50_ms": "summarize latency p50 (ms)",
    "latency_p95_ms": "summarize latency p95 (ms)",
    "api_input_tokens": "API input tokens",
    "api_output_tokens": "API output tokens",
    "sessions_needing_escalation": "sessions needing escalation",
    "sessions_leased": "sessions with a live lease",
    "sessions_pending": "sessions with a job pending",
    "sessions_blocked": "sessions dead-lettered (cooling down)",
}


def register(sub: Subparsers) -> None:
    p = command(sub, "stats", "Show sessions, summaries, failures, latency and API usage.", run)
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from worker.db import transaction, utcnow
    from worker.jobs import ops
    from worker.settings import get_settings

    settings = get_settings()
    with transaction() as db:
        data = asdict(ops.collect_stats(db=db, settings=settings, now=utcnow()))
    if args.json:
        emit_json(data)
    else:
        print(format_stats(data))
    return 0


def format_stats(data: dict[str, Any]) -> str:
    """The human form of ``recap stats``."""
    width = max(map(len, STATS_LABELS.values()))
    lines = []
    for key, label in STATS_LABELS.items():
        value = data[key]
        if value is None:
            value = "n/a"
        lines.append(f"{label:<{width}}  {value}")
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(data["runs_by_status"].items()))
    lines.append(f"{'runs by status':<{width}}  {statuses or 'none'}")
    return "\n".join(lines)
