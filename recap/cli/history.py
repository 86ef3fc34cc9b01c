"""``recap history SESSION_ID [--version N] [--json]``: a session's summary versions.

Lists every kept version (number, tokens, the newest message id it covers, the
run that made it, when); ``--version N`` prints that version's text.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict

from recap.cli.base import Subparsers, command, emit_json, positive


def register(sub: Subparsers) -> None:
    p = command(sub, "history", "List a session's summary versions, or print one "
                "(--version N).", run)
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--version", type=positive, metavar="N", help="print version N's text")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from recap.sessions.history import history, summary_at

    if args.version is not None:
        found = summary_at(args.session_id, args.version)
        if args.json:
            emit_json(asdict(found))
        else:
            print(found.text)
        return 0
    versions = history(args.session_id)
    if args.json:
        emit_json([asdict(v) for v in versions])
        return 0
    if not versions:
        print(f"{args.session_id}: no summary versions kept")
    for v in versions:
        through = v.covers_through if v.covers_through is not None else "?"
        print(f"v{v.version}  {v.tokens:>6} tokens  through message {through}  "
              f"run {v.run_id if v.run_id is not None else '-'}  "
              f"{v.created_at:%Y-%m-%d %H:%M:%S}")
    return 0
