"""``recap memories SESSION_ID [--json]``: the durable facts mined from a session,
one ``[importance] category fact`` line each."""

from __future__ import annotations

import argparse

from worker.cli.base import Subparsers, command, emit_json


def register(sub: Subparsers) -> None:
    p = command(sub, "memories", "Print the durable facts mined from a session.", run)
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from worker.api.sessions import memories

    facts = memories(args.session_id)
    if args.json:
        emit_json(facts)
        return 0
    if not facts:
        print(f"{args.session_id}: no memories yet")
    for m in facts:
        print(f"[{m['importance']}] {m['category']:<10} {m['fact']}")
    return 0
