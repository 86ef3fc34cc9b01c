"""Recap's revisions: those its migrations have, and those a database records.

Recap records its revision in a version table of its own,
``recap_alembic_version``, so an app's own Alembic history (``alembic_version``)
can live in the same database: each side migrates and reads only its own table.
An older Recap recorded its revision in ``alembic_version``; the next upgrade
moves it over (:func:`adopt_legacy_version`, run by recap/migrations/env.py) and
leaves any other history's revision where it is.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path

from alembic.script import ScriptDirectory
from sqlalchemy import (
    Column,
    Connection,
    Engine,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    delete,
    insert,
    inspect,
    select,
    text,
)

from recap.errors import DatabaseNotReady

log = logging.getLogger("recap.migrate")

# Recap's own version table; Alembic's default name is left to the app's history.
VERSION_TABLE = "recap_alembic_version"
SHARED_VERSION_TABLE = "alembic_version"
# Tables Recap's first revision creates. A Recap revision id found in
# alembic_version counts as Recap's only beside them: an app's own history may
# name its revisions 0001, 0002, ... too.
RECAP_MARKERS = frozenset({"chat_sessions", "summary_runs"})
# The PostgreSQL advisory lock every Recap migration holds ("recap" in ASCII): a
# number of Recap's own, so an app's advisory locks do not collide with it.
MIGRATION_LOCK = 0x7265636170


def script_location() -> Path:
    """The folder holding env.py and versions/ (the package ``recap.migrations``)."""
    folder = Path(__file__).resolve().parent / "migrations"
    if not (folder / "env.py").is_file():
        raise DatabaseNotReady(f"Recap's migrations are missing: {folder} holds no env.py; "
                               "reinstall Recap")
    return folder


@functools.cache
def head_revisions() -> tuple[str, ...]:
    """The revision(s) this Recap's schema is at when fully migrated."""
    return tuple(sorted(ScriptDirectory(str(script_location())).get_heads()))


@functools.cache
def known_revisions() -> frozenset[str]:
    """Every revision of Recap's migrations, head or not."""
    return frozenset(s.revision for s in ScriptDirectory(str(script_location())).walk_revisions())


@dataclass(frozen=True)
class Versions:
    """What a database records about migrations, Recap's and any other history's."""

    recap: tuple[str, ...]   # in recap_alembic_version (empty: never migrated)
    legacy: tuple[str, ...]  # Recap's, left in alembic_version by an older Recap
    other: tuple[str, ...]   # in alembic_version, of another Alembic history (an app's)


def read_versions(conn: Connection) -> Versions:
    """The revisions ``conn``'s database records (reads only; any transaction is the
    caller's). alembic_version's revisions are an older Recap's (``legacy``) only
    while recap_alembic_version is absent and Recap's tables are there."""
    tables = set(inspect(conn).get_table_names())
    recap = _recorded(conn, VERSION_TABLE) if VERSION_TABLE in tables else ()
    shared = _recorded(conn, SHARED_VERSION_TABLE) if SHARED_VERSION_TABLE in tables else ()
    ours = VERSION_TABLE not in tables and RECAP_MARKERS <= tables
    legacy = tuple(rev for rev in shared if ours and rev in known_revisions())
    return Versions(recap=recap, legacy=legacy,
                    other=tuple(rev for rev in shared if rev not in legacy))


def _version_table(name: str) -> Table:
    # The table Alembic itself creates for a version_table (alembic.runtime.migration).
    return Table(name, MetaData(), Column("version_num", String(32), nullable=False),
                 PrimaryKeyConstraint("version_num", name=f"{name}_pkc"))


def _recorded(conn: Connection, name: str) -> tuple[str, ...]:
    table = _version_table(name)
    return tuple(sorted(conn.execute(select(table.c.version_num)).scalars()))


def lock_migrations(conn: Connection) -> None:
    """Wait for any other Recap migration of this PostgreSQL database to finish, and
    hold it off until ``conn``'s transaction ends: two upgrades started at once
    (two deploys, two containers) take turns, and the second finds the first's
    revisions recorded and runs none of them. SQLite needs none: a migration's
    transaction starts with BEGIN IMMEDIATE, which does the same."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})


def adopt_legacy_version(conn: Connection) -> tuple[str, ...]:
    """Move the revision an older Recap recorded in alembic_version into
    recap_alembic_version; returns what was moved (empty: nothing to move).

    Runs in the caller's transaction (the upgrade's) and never commits.
    alembic_version keeps every other history's revision, and is dropped only
    when Recap's was all it held."""
    versions = read_versions(conn)
    if not versions.legacy:
        return ()
    _version_table(VERSION_TABLE).create(conn)
    conn.execute(insert(_version_table(VERSION_TABLE)),
                 [{"version_num": rev} for rev in versions.legacy])
    shared = _version_table(SHARED_VERSION_TABLE)
    conn.execute(delete(shared).where(shared.c.version_num.in_(versions.legacy)))
    if not versions.other:
        shared.drop(conn)
    log.info("moved Recap's revision %s from %s to %s", ", ".join(versions.legacy),
             SHARED_VERSION_TABLE, VERSION_TABLE)
    return versions.legacy


def outside_recap(name: str | None, type_: str, parent_names: object = None) -> bool:
    """Alembic's ``include_name`` hook for an app sharing Recap's database: False
    for Recap's tables and its version table, so the app's autogenerate neither
    drops nor alters them."""
    from recap.models import SEARCH_OBJECTS, Base

    if type_ != "table" or not name:
        return True
    return not (name == VERSION_TABLE or name in Base.metadata.tables
                or name.startswith(SEARCH_OBJECTS))


def read_database(engine: Engine) -> Versions:
    """:func:`read_versions` on a connection of its own.
    Raises SQLAlchemy's errors when the database cannot be reached."""
    with engine.connect() as conn:
        return read_versions(conn)


def current_revisions(engine: Engine) -> tuple[str, ...]:
    """The revision(s) recorded in recap_alembic_version (empty: never migrated).
    Raises SQLAlchemy's errors when the database cannot be reached."""
    return read_database(engine).recap


def another_history(versions: Versions) -> str:
    """What alembic_version holds when it is another history's (an app's)."""
    return (f"{SHARED_VERSION_TABLE} belongs to another Alembic history (revision "
            f"{join_revisions(versions.other)}), not Recap's: left alone")


def join_revisions(revisions: tuple[str, ...]) -> str:
    return ", ".join(revisions)
