"""``recap configure SESSION_ID [KEY=VALUE ...] [--clear]``: override settings for
one session.

Keys are the per-session settings (e.g. ``trigger_messages=50 prompt=es``);
prints the session's stored overrides as JSON. ``--clear`` removes them all.
"""

from __future__ import annotations

import argparse
from typing import Any

from worker.cli.base import Subparsers, command, emit_json


def register(sub: Subparsers) -> None:
    p = command(sub, "configure", "Override settings for one session "
                "(e.g. trigger_messages=50 prompt=es).", run)
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("settings", nargs="*", metavar="KEY=VALUE")
    p.add_argument("--clear", action="store_true", help="remove every override")


def run(args: argparse.Namespace) -> int:
    from worker.api.sessions import configure_session
    from worker.errors import InvalidInput

    overrides: dict[str, Any] = {}
    for pair in args.settings:
        key, sep, value = pair.partition("=")
        if not sep:
            raise InvalidInput(f"expected KEY=VALUE, got {pair!r}")
        overrides[key.strip()] = value.strip()
    stored = configure_session(args.session_id, None if args.clear else overrides)
    emit_json({"session_id": args.session_id, "overrides": stored})
    return 0
