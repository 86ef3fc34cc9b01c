"""``recap context SESSION_ID [--system FILE]``: print the assembled context as JSON.

The same window the chat app sends to the model (summary, pinned and recent
messages), with the system prompt read from FILE.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from worker.cli.base import Subparsers, command


def register(sub: Subparsers) -> None:
    p = command(sub, "context", "Print the assembled context of a session as JSON.", run)
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--system", metavar="FILE", help="file holding the system prompt")


def run(args: argparse.Namespace) -> int:
    from worker.errors import InvalidInput

    system_prompt = ""
    if args.system:
        try:
            system_prompt = Path(args.system).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read the system prompt {args.system}: {exc}") from None
    from worker.api.context import render_json

    print(render_json(args.session_id, system_prompt))
    return 0
