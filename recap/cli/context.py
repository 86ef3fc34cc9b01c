"""``recap context SESSION_ID [--system FILE] [--quiet]``: print the assembled context as JSON.

The same window the chat app sends to the model (summary, pinned and recent
messages), with the system prompt read from FILE. stdout is only that JSON (pipe
it to jq); stderr says, unless ``--quiet``, the session's title, its size
against the budget, and why it is not summarized yet and what will trigger it
(or that it is due, or a job is queued or running).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from recap.cli.base import Subparsers, command


def register(sub: Subparsers) -> None:
    p = command(sub, "context", "Print the assembled context of a session as JSON.", run)
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--system", metavar="FILE", help="file holding the system prompt")
    p.add_argument("--quiet", action="store_true",
                   help="only the JSON: leave out the session's outlook on stderr (its title, "
                        "and why it is not summarized yet)")


def run(args: argparse.Namespace) -> int:
    from recap.errors import InvalidInput

    system_prompt = ""
    if args.system:
        try:
            system_prompt = Path(args.system).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read the system prompt {args.system}: {exc}") from None
    from recap.api.context import render_json

    print(render_json(args.session_id, system_prompt), flush=True)
    if not args.quiet:
        from recap.cli.outlook import describe
        from recap.db import transaction, utcnow
        from recap.ops.outlook import session_outlook
        from recap.settings import get_settings

        with transaction() as db:
            outlook = session_outlook(args.session_id, db=db, settings=get_settings(),
                                      now=utcnow())
        print("\n".join(describe(outlook)), file=sys.stderr)
    return 0
