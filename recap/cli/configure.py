"""``recap configure SESSION_ID [KEY=VALUE ...] [--reset]``: show or override settings
for one session.

With no KEY=VALUE it only prints the session's stored overrides as JSON (nothing
changes). Keys are the per-session settings (:data:`KEYS`, e.g.
``keep_recent=6 prompt=es``), validated with the same limits as their
RECAP_* variables; setting keys replaces the earlier overrides and prints the
stored ones. ``--reset`` removes them all.
"""

from __future__ import annotations

import argparse
from typing import Any

from recap.cli.base import Subparsers, command, emit_json, glossary

# recap.settings.Tuning's fields (a test keeps the two equal). Listed here, not
# imported, so that `recap --help` loads no settings machinery.
KEYS = {
    "policy": "when and how deep to fold: adaptive (the session's own marks) or threshold "
              "(the fixed rule below)",
    "trigger_messages": "normal rule: summarize once a session has more active messages "
                        "than this...",
    "trigger_tokens": "...and its candidate batch has more tokens than this",
    "batch_size": "most messages one summary condenses (the candidate batch)",
    "keep_recent": "the newest messages, never condensed (threshold: below "
                   "trigger_messages; adaptive: the cap of its own window)",
    "max_summary_tokens": "the summary's length cap (below context_budget_tokens)",
    "context_budget_tokens": "the session's context budget: capacity rule at 80%, "
                             "aggressive at 95%",
    "condense_to": "cache-aware folds: condense down to this share of the budget "
                   "(0: off)",
    "model": "the Claude model that summarizes this session",
    "prompt": "the summary prompt: default or es",
}


def register(sub: Subparsers) -> None:
    p = command(sub, "configure", "Show or override settings for one session "
                "(e.g. keep_recent=6 prompt=es).", run)
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("settings", nargs="*", metavar="KEY=VALUE",
                   help="settings to override; none: print the stored overrides only")
    p.add_argument("--reset", "--clear", dest="reset", action="store_true",
                   help="remove every override of the session")
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = ("valid keys (each validated with the limits of the RECAP_<KEY> variable of "
                "the same name):\n"
                + glossary(KEYS, aligned=True)
                + "\n\nThe fixed rule's trigger_messages, trigger_tokens, batch_size and "
                "condense_to are refused under the adaptive policy (the default), which "
                "does not read them: set them with policy=threshold, e.g.\n"
                "  recap configure SESSION_ID policy=threshold trigger_tokens=4000\n\n"
                "Prints the stored overrides as JSON. With no KEY=VALUE nothing "
                "changes; setting keys replaces every earlier override of the session; "
                "only --reset removes them.")


def run(args: argparse.Namespace) -> int:
    from recap.errors import InvalidInput
    from recap.sessions.overrides import configure_session

    if args.reset and args.settings:
        raise InvalidInput("--reset removes every override: give it no KEY=VALUE")
    if not args.settings and not args.reset:
        emit_json({"session_id": args.session_id, "overrides": _stored(args.session_id)})
        return 0
    overrides: dict[str, Any] = {}
    for pair in args.settings:
        key, sep, value = pair.partition("=")
        if not sep:
            raise InvalidInput(f"expected KEY=VALUE, got {pair!r}")
        overrides[key.strip()] = value.strip()
    stored = configure_session(args.session_id, None if args.reset else overrides)
    emit_json({"session_id": args.session_id, "overrides": stored})
    return 0


def _stored(session_id: str) -> dict[str, Any] | None:
    """The session's overrides, read only (SessionNotFound for an unknown id)."""
    from recap.core.validate import check_session_id
    from recap.db import transaction
    from recap.errors import SessionNotFound
    from recap.models import ChatSession

    check_session_id(session_id)
    with transaction() as db:
        row = db.get(ChatSession, session_id)
        if row is None:
            raise SessionNotFound(f"no chat session with id {session_id!r}")
        return dict(row.overrides) if row.overrides else None
