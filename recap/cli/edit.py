"""``recap edit SESSION_ID MESSAGE_ID --content TEXT | --blocks JSON``: change an
active message in place (content, blocks and token counts; counters stay exact).

A summarized message cannot change in place: the error says how to rewind.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from recap.cli.base import Subparsers, command, emit_json, positive


def register(sub: Subparsers) -> None:
    p = command(sub, "edit", "Replace an active message's content.", run)
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("message_id", metavar="MESSAGE_ID", type=positive)
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument("--content", metavar="TEXT", help="the new text")
    given.add_argument("--blocks", metavar="JSON",
                       help="the new content as a Messages API content array (JSON)")


def run(args: argparse.Namespace) -> int:
    from recap.errors import InvalidInput
    from recap.sessions.edit import edit_message

    content: object = args.content
    if args.blocks is not None:
        try:
            content = json.loads(args.blocks)
        except ValueError as exc:
            raise InvalidInput(f"--blocks: invalid JSON: {exc}") from None
    emit_json(asdict(edit_message(args.session_id, args.message_id, content)))
    return 0
