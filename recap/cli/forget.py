"""``recap forget (--session ID | --user ID) [--source KIND]``: erase everything
stored about one session or one user, in one transaction (``recap.forget``).

With ``--source KIND`` only memories go: what the session (or the user's
sessions) stated as KIND (user, assistant, tool, document, unverified, guard,
legacy), a memory going when its last source goes (``recap.forget_memories``);
messages and summaries stay. ``--source user`` also drops the ``unverified``
paraphrases the model attributed to the user.

Deletes the messages (active and archived), the session rows (summary, title,
settings), the memories and the audit rows (summary_runs, title_runs) of the
session, or of every session of the user, and prints the rows erased per table.
A job running on the session finds it gone and changes nothing. Safe to repeat.
"""

from __future__ import annotations

import argparse

from recap.cli.base import Subparsers, command, emit_json


def register(sub: Subparsers) -> None:
    p = command(sub, "forget", "Erase everything stored about a session or a user.", run)
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--session", metavar="ID", help="one session (the app's id)")
    target.add_argument("--user", metavar="ID",
                        help="a user: every session that names it (add_message's user_id) "
                             "and the user's memories")
    p.add_argument("--source", metavar="KIND",
                   help="only drop the memories stated as KIND (user, assistant, tool, "
                        "document, unverified, guard, legacy; user also drops the "
                        "unverified paraphrases of what the user said); nothing else is "
                        "erased")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from recap.sessions.forget import forget, forget_memories

    if args.source is not None:
        dropped = forget_memories(session_id=args.session, user_id=args.user,
                                  source=args.source)
        if args.json:
            emit_json({"memories": dropped})
        else:
            print(f"dropped {dropped} {'memory' if dropped == 1 else 'memories'} stated as "
                  f"{args.source}")
        return 0

    counts = forget(session_id=args.session, user_id=args.user)
    if args.json:
        emit_json(counts)
        return 0
    who = f"session {args.session!r}" if args.session is not None else f"user {args.user!r}"
    print(f"forgot {who}: {sum(counts.values())} rows erased")
    for table, n in counts.items():
        print(f"  {table:<18} {n}")
    return 0
