"""``recap db upgrade|downgrade|current|check``: the schema of the database at DATABASE_URL,
run by Alembic from the installed package (no source checkout, any directory).

Recap records its revision in ``recap_alembic_version``; an app's own Alembic
history in ``alembic_version`` beside it is named and left alone. ``upgrade``
migrates to the head (creating a SQLite file and its folder; a line per migration
on a terminal), first moving the
revision an older Recap recorded in ``alembic_version``; ``downgrade`` migrates
back to a named revision (``base``: no Recap table); ``current`` prints the
recorded revision and the head; ``check`` exits 0 when the database is reachable
and at the head, else prints why and how to fix it (1)."""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from recap.cli.base import Progress, Subparsers, command, err

if TYPE_CHECKING:
    from recap.migrate import Versions


def register(sub: Subparsers) -> None:
    p = command(sub, "db", "Create, upgrade or downgrade the database schema, or check it.", run)
    actions = p.add_subparsers(dest="db_action", required=True, metavar="ACTION")
    up = actions.add_parser("upgrade", help="migrate DATABASE_URL to the head (or REVISION)",
                            description="Migrate DATABASE_URL to the head (or REVISION). "
                                        "An app's own Alembic history (alembic_version) is "
                                        "left alone; the revision an older Recap recorded "
                                        "there moves to recap_alembic_version.")
    up.add_argument("revision", nargs="?", default="head",
                    help="target revision (default: head)")
    down = actions.add_parser(
        "downgrade", help="migrate DATABASE_URL back to REVISION (drops what later "
                          "migrations added, with its rows)",
        description="Migrate DATABASE_URL back to REVISION, to run an older Recap: what "
                    "later migrations added is dropped with its rows, and `base` drops "
                    "every Recap table. An app's own tables and alembic_version are left "
                    "alone.")
    down.add_argument("revision", help="target revision (`recap db current` names them), "
                                       "or base")
    actions.add_parser("current", help="print the database's revision and the head",
                       description="Print the database's revision and the head.")
    actions.add_parser("check", help="exit 0 if the database is at the head, else say why",
                       description="Exit 0 if the database is reachable and at the head; "
                                   "else print why and the fixing command, and exit 1.")


def run(args: argparse.Namespace) -> int:
    from recap.db import make_engine
    from recap.migrate import UNREACHABLE, safe_url, schema_problem, sqlite_file
    from recap.settings import get_settings

    url = get_settings().database_url
    engine = make_engine(url)
    try:
        problem = schema_problem(engine)
    finally:
        engine.dispose()
    missing_file = (path := sqlite_file(url)) is not None and not path.is_file()
    if problem is not None and (UNREACHABLE in problem or
                                (missing_file and args.db_action != "upgrade")):
        err(f"error: {problem}")  # the URL (password masked) and what to do
        return 1
    where = safe_url(url)
    if args.db_action in ("upgrade", "downgrade"):
        return _migrate(url, args.revision, where=where, up=args.db_action == "upgrade")
    if args.db_action == "check" and problem is not None:
        err(f"error: {problem}")
        return 1
    versions = _read(url)
    for line in _describe(versions, current=args.db_action == "current"):
        print(f"{where}: {line}")
    return 0


def _migrate(url: str, revision: str, *, where: str, up: bool) -> int:
    from recap.migrate import (
        SHARED_VERSION_TABLE,
        VERSION_TABLE,
        another_history,
        downgrade,
        upgrade,
    )

    before = _read(url)
    ran = [0]
    if up:
        pending = _pending(before.recap or before.legacy, revision)
        with _migration_lines(Progress("db upgrade"), pending, ran=ran):
            upgrade(url, revision)
    else:
        downgrade(url, revision)
    after = _read(url)
    if after.other:
        print(f"{where}: {another_history(after)}")
    if before.legacy:
        print(f"{where}: moved Recap's revision {_revs(before.legacy)} from "
              f"{SHARED_VERSION_TABLE} to {VERSION_TABLE}")
    was = before.recap or before.legacy
    if was == after.recap:
        print(f"{where}: already at {_revs(after.recap)}")
    elif up and ran[0] == 0:
        # This upgrade waited for another one (recap.revisions.lock_migrations),
        # which did the work.
        print(f"{where}: already at {_revs(after.recap)}: another upgrade migrated it "
              f"from {_revs(was)} meanwhile")
    else:
        verb = "upgraded" if up else "downgraded"
        print(f"{where}: {verb} from {_revs(was)} to {_revs(after.recap)}")
    return 0


def _describe(versions: Versions, *, current: bool) -> list[str]:
    """What ``check`` (at the head) or ``current`` says about the recorded revisions."""
    from recap.migrate import SHARED_VERSION_TABLE, UPGRADE, another_history, head_revisions

    heads = head_revisions()
    if versions.legacy:
        lines = [f"an older Recap recorded its revision {_revs(versions.legacy)} in "
                 f"{SHARED_VERSION_TABLE}: `{UPGRADE}` moves it (the head is {_revs(heads)})"]
    elif versions.recap == heads:
        lines = [f"Recap's schema is at migration {_revs(heads)} (the head)" if not current
                 else f"{_revs(heads)} (at the head)"]
    else:
        lines = [f"{_revs(versions.recap)} (the head is {_revs(heads)})"]
    if versions.other:
        lines.append(another_history(versions))
    return lines


def _read(url: str) -> Versions:
    from recap.db import make_engine
    from recap.migrate import Versions, read_database, sqlite_file

    path = sqlite_file(url)
    if path is not None and not path.is_file():
        return Versions(recap=(), legacy=(), other=())
    engine = make_engine(url)
    try:
        return read_database(engine)
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
def _migration_lines(progress: Progress, total: int | None, *,
                     ran: list[int]) -> Iterator[None]:
    """Count the migrations the block runs in ``ran[0]``, and show a progress line
    for each (on a terminal only)."""

    class Line(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if message.startswith("Running upgrade "):
                ran[0] += 1
                if progress.on:
                    source, _, rest = message.removeprefix("Running upgrade ").partition(
                        " -> ")
                    progress.step(ran[0], total, "migrations",
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
