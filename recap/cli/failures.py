"""``recap failures [--limit N] [--json]``: failed and dead runs with their errors,
newest first (default 20): summarize jobs (summary_runs) and title calls
(title_runs), the JOB column says which.

The API key never appears: errors are redacted when recorded, and again here
for rows that older code wrote.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict

from recap.cli.base import Subparsers, command, emit_json, positive


def register(sub: Subparsers) -> None:
    p = command(sub, "failures", "List failed and dead runs (summarize and title jobs) with "
                "their errors, newest first.", run)
    p.add_argument("--limit", type=positive, default=20, metavar="N", help="default 20")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from recap.core.text import redact
    from recap.db import transaction
    from recap.ops import requeue as ops
    from recap.settings import get_settings

    key = get_settings().anthropic_api_key
    secret = key.get_secret_value() if key else None
    with transaction() as db:
        rows = ops.failures(db=db, limit=args.limit)
    items = [{**asdict(r),
              "error": r.error and redact(r.error, secret),
              "reason": r.reason and redact(r.reason, secret)} for r in rows]
    if args.json:
        emit_json(items)
        return 0
    if not items:
        print("no failed or dead runs")
    for item in items:
        when = item["created_at"].isoformat(timespec="seconds") if item["created_at"] else "?"
        print(f"{when}  {item['status']:<6}  {item['job']:<9}  session={item['session_id']}  "
              f"task={item['task_id'] or '-'}  attempt={item['attempt']}\n"
              f"    {item['error'] or item['reason'] or '(no error recorded)'}")
    return 0
