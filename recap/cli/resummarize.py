"""``recap resummarize SESSION_ID``: rebuild a session's summary from its archive.

Needs every condensed message in the archive (RECAP_ARCHIVE_SUMMARIZED=true since
the session's first summary); runs in this process and prints the outcome as
JSON. A session busy with a job, or changed while rebuilding, is an error
(exit 1): try again. On a terminal, stderr shows a line per chunk of the archive
folded (one model call each), with how many are left.
"""

from __future__ import annotations

import argparse

from recap.cli.base import Progress, Subparsers, command, emit_json


def register(sub: Subparsers) -> None:
    p = command(sub, "resummarize", "Rebuild a session's summary from its archive "
                "(RECAP_ARCHIVE_SUMMARIZED=true).", run)
    p.add_argument("session_id", metavar="SESSION_ID")


def run(args: argparse.Namespace) -> int:
    from recap.store.enqueue import send
    from recap.worker.jobs.archive import resummarize
    from recap.worker.jobs.resources import get_resources

    with Progress("resummarize").reported():
        outcome = resummarize(args.session_id, res=get_resources())
    if outcome.more_work:  # its pending marker was set with the write; never raises
        send(args.session_id)
    emit_json(outcome.as_dict())
    return 0
