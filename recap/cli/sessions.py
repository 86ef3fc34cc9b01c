"""``recap sessions [--limit N] [--json]``: the sessions with the most active tokens,
one line each: title, size, summary version and what the next summary waits for.

The STATE column is the policy's outlook (``recap context SESSION_ID`` explains
one session in full): ``due`` (a rule fires now), ``few-messages`` (not over
RECAP_TRIGGER_MESSAGES), ``small-batch`` (the candidate batch is not over
RECAP_TRIGGER_TOKENS yet), ``normal-blocked`` (the batch is full of short
messages: only the context reaching 80% of the budget triggers),
``below-high-water`` (RECAP_POLICY=adaptive: the context is under the session's
own high-water mark), ``nothing-to-condense`` (only pinned or recent
messages), ``invalid-overrides``. A job that is queued, running or dead-lettered
is shown after the state.
"""

from __future__ import annotations

import argparse

from recap.cli.base import Subparsers, command, emit_json, glossary, positive

STATES = {
    "due": "a rule fires now: the hook or the sweeper queues a job",
    "few-messages": "not over RECAP_TRIGGER_MESSAGES messages yet",
    "small-batch": "the candidate batch is not over RECAP_TRIGGER_TOKENS tokens yet",
    "normal-blocked": "the batch is full of short messages: only the context reaching 80% of "
                      "the budget triggers",
    "below-high-water": "adaptive policy: the context is under the session's own high-water "
                        "mark",
    "nothing-to-condense": "only pinned messages and the keep window are left",
    "invalid-overrides": "the session's overrides are invalid (recap configure)",
}


def register(sub: Subparsers) -> None:
    p = command(sub, "sessions", "List the largest sessions: title, size, summary and what "
                "their next summary waits for.", run)
    p.add_argument("--limit", type=positive, default=20, metavar="N", help="default 20")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.epilog = "STATE: " + glossary(STATES) + (
        ". `recap context SESSION_ID` explains one session in full.")


def run(args: argparse.Namespace) -> int:
    from recap.db import transaction, utcnow
    from recap.ops.outlook import largest
    from recap.settings import get_settings

    with transaction() as db:
        rows = largest(db=db, settings=get_settings(), now=utcnow(), limit=args.limit)
    if args.json:
        emit_json([o.as_dict() for o in rows])
        return 0
    if not rows:
        print("no sessions with active messages")
        return 0
    table = [("SESSION", "MESSAGES", "TOKENS", "CONTEXT", "SUMMARY", "STATE", "TITLE")]
    for o in rows:
        table.append((o.session_id, str(o.messages), str(o.active_tokens), f"{o.usage:.0%}",
                      f"v{o.summary_version}" if o.summary_version else "-",
                      o.state + (f" ({o.job})" if o.job else ""), o.title or "(untitled)"))
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]) - 1)]
    for r in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)) + "  " + r[-1])
    return 0
