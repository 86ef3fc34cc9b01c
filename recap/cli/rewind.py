"""``recap rewind SESSION_ID --after MESSAGE_ID``: delete every message after one.

Inside summarized history it restores the summary version before the point and
the archived messages up to it (needs RECAP_ARCHIVE_SUMMARIZED); prints what was
done as JSON. A session busy with a job is an error (exit 1): retry.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict

from recap.cli.base import Subparsers, command, emit_json, whole_number


def register(sub: Subparsers) -> None:
    p = command(sub, "rewind", "Delete every message of a session after one (restoring "
                "summarized history from the archive).", run)
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--after", required=True, metavar="MESSAGE_ID",
                   type=lambda text: whole_number(text, 0),
                   help="keep this message and every one before it (0: delete all)")


def run(args: argparse.Namespace) -> int:
    from recap.sessions.rewind import rewind

    emit_json(asdict(rewind(args.session_id, args.after)))
    return 0
