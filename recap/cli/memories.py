"""``recap memories SESSION_ID [--json]``: the durable facts a session's context can
show: its own and, when the session names a user, the user's (mined from any of
the user's sessions). Superseded facts are not listed.

Facts are mined from each batch just before it is condensed, so a session has
none until its first summary. One line per fact, most important first::

    [IMPORTANCE] CATEGORY   SOURCE     FACT  (messages FIRST-LAST)

IMPORTANCE is 1-5 (5: most important, as the model rated it); CATEGORY is one of
preference, personal, work, plan, fact, other; SOURCE is who stated it, the
strongest of its sources (:data:`SOURCES`); FIRST-LAST are the ids of the
condensed batch the fact came from. Each fact is listed once: the retention
guard keeps a sentence once per specific in it, and those rows are one line.
``--json`` has the same fields by name (SOURCE is ``kind``), plus ``id``,
``ids`` (every row of the fact), ``session_id`` (the session it was mined
from), ``created_at`` and ``sources`` (each batch that stated it: session,
kind, message range, run).
"""

from __future__ import annotations

import argparse

from recap.cli.base import Subparsers, command, emit_json, glossary

# Who stated a fact (the SOURCE column), as the memories block of a context shows it.
SOURCES = {
    "user": "the user, in their own words",
    "tool": "a tool result",
    "document": "a document or text the user pasted",
    "assistant": "the assistant's replies",
    "unverified": "the model said the user stated it; not found in the user's words",
    "guard": "a line the retention guard kept verbatim",
    "legacy": "stored before sources were recorded",
}
COLUMNS = ("[IMPORTANCE 1-5, 5 = most important] CATEGORY (preference, personal, work, plan, "
           "fact or other) SOURCE (who stated it: " + ", ".join(SOURCES) + ") FACT "
           "(messages: ids of the condensed batch it was mined from)")


def register(sub: Subparsers) -> None:
    p = command(sub, "memories", "Print the durable facts mined from a session.", run)
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.epilog = ("Each line: " + COLUMNS + ". SOURCE: " + glossary(SOURCES) + ". Facts are "
                "mined from each batch just before it is condensed, so a session has none "
                "before its first summary; each is listed once.")


def run(args: argparse.Namespace) -> int:
    from recap.sessions.overrides import memories

    facts = memories(args.session_id)
    if args.json:
        emit_json(facts)
        return 0
    if not facts:
        print(f"{args.session_id}: no memories yet (they are mined from each batch as it is "
              "condensed)")
        return 0
    print(f"{args.session_id}: {len(facts)} {'memory' if len(facts) == 1 else 'memories'}, "
          "most important first")
    print("columns: " + COLUMNS)
    for m in facts:
        source = (f"  (messages {m['first_message_id']}-{m['last_message_id']})"
                  if m["first_message_id"] is not None else "")
        print(f"[{m['importance']}] {m['category']:<10} {m['kind']:<10} {m['fact']}{source}")
    return 0
