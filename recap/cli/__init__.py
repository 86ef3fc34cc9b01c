"""``recap``: the operator's command line, one module per command (Celery's celery/bin style).

Each command module has ``register(sub)`` (its subparser, arguments and help)
and ``run(args) -> int``. Exit codes: 0 ok, 1 a Recap error (printed as
``recap: error: ...``, no traceback), 2 a usage error, 130 interrupted, 141
stdout closed early by its reader (``recap stats --json | head``: no traceback).
Building the parser imports nothing from Recap, so ``recap --help`` works
without settings or services; each command imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import recap
from recap.cli import (
    bench,
    celery_run,
    check,
    configure,
    context,
    db,
    demo,
    edit,
    eval,
    failures,
    forget,
    history,
    ingest,
    memories,
    metrics,
    resummarize,
    retry,
    rewind,
    serve,
    sessions,
    stats,
    summarize,
    sweep,
    tokenizer,
)
from recap.cli.base import PROG, Subparsers, err
from recap.cli.ingest import parse_line

__all__ = ["build_parser", "main", "parse_args", "parse_line"]


class Command(Protocol):
    def register(self, sub: Subparsers) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


# In the order ``recap --help`` lists them.
COMMANDS: tuple[Command, ...] = (ingest, context, stats, metrics, failures, retry, summarize, sweep,
                                 sessions, memories, forget, history, rewind, edit, resummarize,
                                 configure, db, tokenizer, serve, demo, eval, bench, check)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Operate Recap: rolling summaries of long chat sessions.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    celery_run.register(sub)  # Celery's own commands, arguments and all
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` as ``main`` reads it (SystemExit on --help and usage errors)."""
    return parser.parse_args(argv)


# Commands that bring their own database (or none), or report its state themselves:
# `metrics` serves recap_up 0 while the database is down, `serve` answers /readyz
# with the same one line (and 503 on each route until it is fixed).
_OWN_DATABASE = ("demo", "bench", "tokenizer", "eval", "db", "metrics", "check", "serve")


def _database_error(exc: BaseException) -> str | None:
    """One line for a database that went away mid-command; None for any other error
    (which keeps its traceback). Schema problems are found before the command runs."""
    from sqlalchemy.exc import InterfaceError, OperationalError

    if not isinstance(exc, OperationalError | InterfaceError):
        return None
    return f"database: {str(getattr(exc, 'orig', None) or exc).splitlines()[0]}"


def _require_database(command: str) -> None:
    """Refuse to run against a database that is unreachable or not at the head (one
    line, raises DatabaseNotReady); create and migrate the embedded default."""
    if command in _OWN_DATABASE:
        return
    from recap.db import DatabaseOptions, make_engine, use_database
    from recap.migrate import ensure_schema
    from recap.settings import get_settings

    options = DatabaseOptions.of(get_settings())
    use_database(options)  # every command's transactions use the database checked here
    engine = make_engine(options.url)
    try:
        ensure_schema(engine, announce=err)  # says where the embedded default is, once
    finally:
        engine.dispose()


def _offline_encodings() -> None:
    """With no TIKTOKEN_CACHE_DIR, a checkout's neighbouring shared/tiktoken-cache
    folder (recap.paths.checkout_tiktoken_cache), for this process and those it
    starts: tiktoken reads the variable on every load, and a machine that cannot
    download its encodings then still runs `recap demo` as README gives it."""
    from recap.paths import checkout_tiktoken_cache

    if not os.environ.get("TIKTOKEN_CACHE_DIR") and (found := checkout_tiktoken_cache()):
        os.environ["TIKTOKEN_CACHE_DIR"] = str(found)


def shadowing_module(folder: Path) -> Path | None:
    """An app's own ``recap.py`` (or ``recap/`` package) in ``folder``: Python run from
    there (``python -c``, ``python -m recap.testing``, the app's ``from recap import
    ...``) imports it instead of Recap. None when there is none."""
    ours = Path(recap.__file__).resolve()
    for candidate in (folder / "recap.py", folder / "recap" / "__init__.py"):
        if candidate.is_file() and candidate.resolve() != ours:
            return candidate
    return None


def _warn_shadowing() -> None:
    found = shadowing_module(Path.cwd())
    if found is not None:
        err(f"warning: {found} hides Recap's package `recap` from Python run in this "
            "folder (python -c, python -m recap.testing, your app's `from recap import "
            "...`): rename it (e.g. app_recap.py), or run Recap as a separate service "
            "over HTTP (recap serve)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (argparse's 2 for usage errors)."""
    _warn_shadowing()
    _offline_encodings()
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in and args_in[0] in celery_run.COMMANDS:
        return celery_run.start(args_in[0], args_in[1:])
    parser = build_parser()
    try:
        args = parse_args(parser, args_in)
    except SystemExit as exc:  # --help (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else 0
    from recap.errors import RecapError

    try:
        _require_database(args.command)
        code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe fails here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        # The reader went away (`| head`). Point stdout at /dev/null so the flush
        # at exit cannot fail again (the recipe in Python's signal docs).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141  # as a command killed by SIGPIPE
    except RecapError as exc:
        err(f"error: {exc}")
    except KeyboardInterrupt:
        err("interrupted")
        return 130
    except Exception as exc:
        line = _database_error(exc)
        if line is None:
            line = _logged(exc, argv)
        err(f"error: {line}")  # one line, not a traceback
    return 1


def _logged(exc: Exception, argv: Sequence[str] | None) -> str:
    """One line for an unexpected error; its traceback goes to the CLI's log file in
    the data directory, whose path the line gives (printed here if it cannot be
    written)."""
    import traceback
    from datetime import UTC, datetime

    from recap.db import scrub
    from recap.paths import cli_log

    scrub(exc)  # a database error's DETAIL may quote chat text: never into the log
    first = (str(exc).strip().splitlines() or [""])[0]
    summary = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    path = cli_log()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as log:
            command = " ".join(sys.argv[:1] + list(sys.argv[1:] if argv is None else argv))
            log.write(f"--- {datetime.now(UTC).isoformat()} {command}\n")
            log.write("".join(traceback.format_exception(exc)))
    except OSError:
        traceback.print_exception(exc)
        return summary
    return f"{summary} (traceback in {path})"


if __name__ == "__main__":
    sys.exit(main())
