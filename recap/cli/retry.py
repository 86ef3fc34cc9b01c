"""``recap retry (SESSION_ID | --all-dead)``: clear a session's dead-letter state and
queue a summarize job.

Clears the cool-down and the lost-lease count before the job is published, so
the job can claim the session; ``--all-dead`` does this for every session whose
most recent run is dead. Prints one line per session (queued, already pending,
or not sent: exit 1).
"""

from __future__ import annotations

import argparse

from recap.cli.base import Subparsers, command, report_queued


def register(sub: Subparsers) -> None:
    p = command(sub, "retry",
                "Clear a session's dead-letter state and queue a summarize job.", run)
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("session_id", nargs="?", metavar="SESSION_ID")
    target.add_argument("--all-dead", action="store_true",
                        help="every session whose most recent run is dead")


def run(args: argparse.Namespace) -> int:
    from recap.core.validate import check_session_id
    from recap.db import transaction, utcnow
    from recap.ops import requeue as ops
    from recap.settings import get_settings

    settings = get_settings()
    if args.all_dead:
        with transaction() as db:
            ids = ops.dead_session_ids(db=db)
        if not ids:
            print("no dead sessions")
            return 0
    else:
        ids = [check_session_id(args.session_id)]
    return report_queued(ops.queue_jobs(ids, settings=settings, now=utcnow(), unblock=True))
