"""``recap configure SESSION_ID [KEY=VALUE ...] [--replace | --reset] [--create]``: show
or override settings for one session.

With no KEY=VALUE it only prints the session's stored overrides as JSON (nothing
changes). Keys are the per-session settings (:data:`KEYS`, e.g.
``keep_recent=6 prompt=es``), validated with the same limits as their
RECAP_* variables; setting keys adds them to the earlier overrides (``KEY=``
removes one; ``--replace``: the keys given become the only ones) and prints the
stored ones. ``--reset`` removes them all. An id never stored is refused unless
``--create``; a model Recap does not know is stored with a warning naming the
nearest known one.
"""

from __future__ import annotations

import argparse
from typing import Any

from recap.cli.base import Subparsers, command, emit_json, err, glossary

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
    "reply_model": "the Claude model the app replies with: its prices price what a reply "
                   "reads and writes",
    "cache_ttl": "the app's prompt-cache lifetime, 5m or 1h: the cache-write price",
    "prompt": "the summary prompt: default or es",
}


def register(sub: Subparsers) -> None:
    p = command(sub, "configure", "Show or override settings for one session "
                "(e.g. keep_recent=6 prompt=es).", run)
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("settings", nargs="*", metavar="KEY=VALUE",
                   help="settings to override; none: print the stored overrides only")
    p.add_argument("--replace", action="store_true",
                   help="the KEY=VALUE given become the session's only overrides (without "
                        "it they are added to the stored ones)")
    p.add_argument("--reset", "--clear", dest="reset", action="store_true",
                   help="remove every override of the session")
    p.add_argument("--create", action="store_true",
                   help="store the session if it does not exist yet (otherwise an unknown "
                        "id is refused)")
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = ("valid keys (each validated with the limits of the RECAP_<KEY> variable of "
                "the same name):\n"
                + glossary(KEYS, aligned=True)
                + "\n\nThe fixed rule's trigger_messages, trigger_tokens, batch_size and "
                "condense_to are refused under the adaptive policy (the default), which "
                "does not read them: set them with policy=threshold, e.g.\n"
                "  recap configure SESSION_ID policy=threshold trigger_tokens=4000\n\n"
                "Prints the stored overrides as JSON. With no KEY=VALUE nothing "
                "changes; KEY=VALUE adds to (or changes) the stored overrides and KEY= "
                "(no value) removes that one; --replace makes the keys given the only "
                "ones; --reset removes them all.")


def run(args: argparse.Namespace) -> int:
    from recap.errors import InvalidInput, SessionNotFound
    from recap.sessions.overrides import model_warning, store_overrides

    if args.reset and (args.settings or args.replace):
        raise InvalidInput("--reset removes every override: give it no KEY=VALUE and no "
                           "--replace")
    if args.replace and not args.settings:
        raise InvalidInput("--replace needs the KEY=VALUE that become the only overrides "
                           "(--reset removes them all)")
    given = None if args.reset else parsed_settings(args.settings)
    warning = model_warning(given)
    try:
        if given == {}:  # a read, or with --create the session stored as it is
            stored = (store_overrides(args.session_id, create=True) if args.create
                      else _stored(args.session_id))
        else:
            stored = store_overrides(args.session_id, given, replace=args.replace,
                                     create=args.create)
    except SessionNotFound as exc:
        raise SessionNotFound(f"{exc}: check the id (recap sessions lists them), or give "
                              "--create to store a new session") from None
    if warning is not None:
        err(f"warning: {warning}")
    emit_json({"session_id": args.session_id, "overrides": stored})
    return 0


def parsed_settings(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` words as overrides; ``KEY=`` (no value) as None: remove it."""
    from recap.errors import InvalidInput

    overrides: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"expected KEY=VALUE, got {pair!r}")
        overrides[key.strip()] = value.strip() or None
    return overrides


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
