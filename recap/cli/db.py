"""``recap db upgrade|current|check``: the schema of the database at DATABASE_URL,
run by Alembic from the installed package (no source checkout, any directory).

``upgrade`` migrates to the head (creating a SQLite file and its folder), with a
line per migration on a terminal; ``current`` prints the recorded revision and
the head; ``check`` exits 0 when the database is reachable and at the head, else
prints why and how to fix it (1)."""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import Iterator

from recap.cli.base import Progress, Subparsers, command, err


def register(sub: Subparsers) -> None:
    p = command(sub, "db", "Create or upgrade the database schema, or check it.", run)
    actions = p.add_subparsers(dest="db_action", required=True, metavar="ACTION")
    up = actions.add_parser("upgrade", help="migrate DATABASE_URL to the head (or REVISION)",
                            description="Migrate DATABASE_URL to the head (or REVISION).")
    up.add_argument("revision", nargs="?", default="head",
                    help="target revision (default: head)")
    actions.add_parser("current", help="print the database's revision and the head",
                       description="Print the database's revision and the head.")
    actions.add_parser("check", help="exit 0 if the database is at the head, else say why",
                       description="Exit 0 if the database is reachable and at the head; "
                                   "else print why and the fixing command, and exit 1.")


def run(args: argparse.Namespace) -> int:
    from sqlalchemy.exc import DBAPIError

    from recap.db import make_engine
    from recap.migrate import (
        UNREACHABLE,
        head_revisions,
        safe_url,
        schema_problem,
        sqlite_file,
        upgrade,
    )
    from recap.settings import get_settings

    url = get_settings().database_url
    where = safe_url(url)
    if args.db_action == "upgrade":
        engine = make_engine(url)
        try:
            problem = schema_problem(engine)
        finally:
            engine.dispose()
        if problem is not None and UNREACHABLE in problem:
            err(f"error: {problem}")  # the URL (password masked) and what to do
            return 1
        before = _current_or_none(url)
        with _migration_lines(Progress("db upgrade"), _pending(before, args.revision)):
            upgrade(url, args.revision)
        after = _current_or_none(url)
        if before == after:
            print(f"{where}: already at {_revs(after)}")
        else:
            print(f"{where}: upgraded from {_revs(before)} to {_revs(after)}")
        return 0
    engine = make_engine(url)
    try:
        problem = schema_problem(engine)
        if args.db_action == "check":
            if problem is not None:
                err(f"error: {problem}")
                return 1
            print(f"{where}: at the head ({_revs(head_revisions())})")
            return 0
        try:  # current: what is recorded, even when it is not the head
            current = _current_or_none(url) if problem is not None else head_revisions()
        except DBAPIError:
            current = None
        path = sqlite_file(url)
        if current is None or (path is not None and not path.is_file()):
            err(f"error: {problem}")  # unreachable, or no such file
            return 1
        state = "at the head" if problem is None else f"the head is {_revs(head_revisions())}"
        print(f"{where}: {_revs(current)} ({state})")
        return 0
    finally:
        engine.dispose()


def _current_or_none(url: str) -> tuple[str, ...]:
    from recap.db import make_engine
    from recap.migrate import current_revisions, sqlite_file

    path = sqlite_file(url)
    if path is not None and not path.is_file():
        return ()
    engine = make_engine(url)
    try:
        return current_revisions(engine)
    finally:
        engine.dispose()


def _pending(current: tuple[str, ...], target: str) -> int | None:
    """How many migrations take ``current`` to ``target`` (None: not one line of
    history, e.g. several heads or a target behind the database)."""
    from alembic.script import ScriptDirectory

    from recap.migrate import script_location

    if len(current) > 1:
        return None
    try:
        return len(list(ScriptDirectory(str(script_location())).iterate_revisions(
            target, current[0] if current else "base")))
    except Exception:  # alembic's own errors say more when the upgrade runs
        return None


# Alembic logs "Running upgrade A -> B, message" here as each migration starts.
MIGRATION_LOGGER = "alembic.runtime.migration"


@contextlib.contextmanager
def _migration_lines(progress: Progress, total: int | None) -> Iterator[None]:
    """A progress line per migration while the block runs (on a terminal only)."""
    if not progress.on:
        yield
        return
    started = 0

    class Line(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            nonlocal started
            message = record.getMessage()
            if message.startswith("Running upgrade "):
                started += 1
                source, _, rest = message.removeprefix("Running upgrade ").partition(" -> ")
                progress.step(started, total, "migrations",
                              f"{source.strip() or 'empty'} -> {rest}")

    logger = logging.getLogger(MIGRATION_LOGGER)
    handler, level = Line(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _revs(revisions: tuple[str, ...]) -> str:
    return ", ".join(revisions) if revisions else "no revision (empty)"
