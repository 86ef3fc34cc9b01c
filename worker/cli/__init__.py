"""``recap``: the operator's command line (ingest, context, stats, failures, retry, ...).

Exit codes: 0 ok, 1 a Recap error (printed as ``recap: error: ...``, no
traceback), 2 a usage error, 130 interrupted. Building the parser imports
nothing from Recap, so ``recap --help`` works without settings or services;
each command imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from worker.cli.base import PROG, err, positive
from worker.cli.jobs import (
    cmd_bench,
    cmd_configure,
    cmd_demo,
    cmd_resummarize,
    cmd_retry,
    cmd_summarize,
    cmd_sweep,
)
from worker.cli.read import (
    cmd_context,
    cmd_failures,
    cmd_ingest,
    cmd_memories,
    cmd_stats,
    parse_line,
)

__all__ = ["build_parser", "main", "parse_line"]


# -- parser and main -----------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Operate Recap: rolling summaries of long chat sessions.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int],
            help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(func=func)
        return p

    p = add("ingest", cmd_ingest, "Add messages from JSON lines "
            '({"session_id", "role", "content", "pinned"}), in order.')
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="JSON-lines file; '-' or nothing reads stdin")
    p.add_argument("--strict", action="store_true", help="stop with exit 1 at the first bad line")

    p = add("context", cmd_context, "Print the assembled context of a session as JSON.")
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--system", metavar="FILE", help="file holding the system prompt")

    p = add("stats", cmd_stats, "Show sessions, summaries, failures, latency and API usage.")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = add("failures", cmd_failures, "List failed and dead runs with their errors, newest first.")
    p.add_argument("--limit", type=positive, default=20, metavar="N", help="default 20")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = add("retry", cmd_retry, "Clear a session's dead-letter state and queue a summarize job.")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("session_id", nargs="?", metavar="SESSION_ID")
    target.add_argument("--all-dead", action="store_true",
                        help="every session whose most recent run is dead")

    p = add("summarize", cmd_summarize, "Queue a summarize job for a session, or run it now.")
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--now", action="store_true",
                   help="run the job in this process and print its outcome as JSON")

    p = add("sweep", cmd_sweep, "Queue sessions that need a summary and have no job.")
    p.add_argument("--all", action="store_true",
                   help="backfill every due session, in batches, until none is left")
    p.add_argument("--batch", type=positive, metavar="N",
                   help="sessions per batch with --all (default RECAP_SWEEP_BATCH)")

    p = add("memories", cmd_memories, "Print the durable facts mined from a session.")
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = add("resummarize", cmd_resummarize,
            "Rebuild a session's summary from its archive (RECAP_ARCHIVE_SUMMARIZED=true).")
    p.add_argument("session_id", metavar="SESSION_ID")

    p = add("configure", cmd_configure,
            "Override settings for one session (e.g. trigger_messages=50 prompt=es).")
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("settings", nargs="*", metavar="KEY=VALUE")
    p.add_argument("--clear", action="store_true", help="remove every override")

    p = add("demo", cmd_demo, "Run a self-contained demo on a local SQLite database.")
    p.add_argument("--messages", type=positive, default=None, metavar="N",
                   help="messages to generate")
    p.add_argument("--db", metavar="PATH", help="SQLite database file to use")

    p = add("bench", cmd_bench, "Run the benchmarks (python -m bench); arguments pass through.")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, metavar="ARGS")
    return parser


def _db_unavailable(exc: BaseException) -> bool:
    from sqlalchemy.exc import InterfaceError, OperationalError

    return isinstance(exc, OperationalError | InterfaceError)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (argparse's 2 for usage errors)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else 0
    from worker.errors import RecapError

    try:
        return int(args.func(args))
    except RecapError as exc:
        err(f"error: {exc}")
    except KeyboardInterrupt:
        err("interrupted")
        return 130
    except Exception as exc:
        if not _db_unavailable(exc):
            raise
        # Down, unreachable or not migrated: one line, not a traceback.
        first = str(exc).splitlines()[0]
        hint = " (is it migrated? alembic upgrade head)" if "no such table" in first else ""
        err(f"error: database: {first}{hint}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
