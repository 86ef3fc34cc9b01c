"""The schema: Alembic run from the installed package, and the check every entry
point makes before it touches a row.

The migrations are the package ``recap.migrations`` (the folder
``recap/migrations/``, shipped in the wheel as it is).

Recap records its revision in a version table of its own,
``recap_alembic_version``, so an app's own Alembic history (``alembic_version``)
can live in the same database: each side migrates and reads only its own table.
An older Recap recorded its revision in ``alembic_version``; ``recap db upgrade``
moves it over (:func:`adopt_legacy_version`) and leaves any other history's
revision where it is.

Every refusal is one line: the URL without its password, what is wrong, and the
command that fixes it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from alembic.config import Config
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
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from recap.engines import make_engine
from recap.errors import DatabaseNotReady
from recap.settings import DEFAULT_DATABASE_URL

log = logging.getLogger("recap.migrate")

UPGRADE = "recap db upgrade"
UNREACHABLE = " is unreachable ("

# Recap's own version table; Alembic's default name is left to the app's history.
VERSION_TABLE = "recap_alembic_version"
SHARED_VERSION_TABLE = "alembic_version"
# Tables Recap's first revision creates. A Recap revision id found in
# alembic_version counts as Recap's only beside them: an app's own history may
# name its revisions 0001, 0002, ... too.
RECAP_MARKERS = frozenset({"chat_sessions", "summary_runs"})


def script_location() -> Path:
    """The folder holding env.py and versions/ (the package ``recap.migrations``)."""
    folder = Path(__file__).resolve().parent / "migrations"
    if not (folder / "env.py").is_file():
        raise DatabaseNotReady(f"Recap's migrations are missing: {folder} holds no env.py; "
                               "reinstall Recap")
    return folder


def alembic_config(url: str) -> Config:
    """An Alembic configuration for ``url`` that needs no alembic.ini."""
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    cfg.set_main_option("path_separator", "os")
    cfg.attributes["url"] = url
    cfg.attributes["configure_logger"] = False
    return cfg


@functools.cache
def head_revisions() -> tuple[str, ...]:
    """The revision(s) this Recap's schema is at when fully migrated."""
    return tuple(sorted(ScriptDirectory(str(script_location())).get_heads()))


def safe_url(url: object) -> str:
    """``url`` as text with its password masked (``***``)."""
    try:
        return make_url(str(url)).render_as_string(hide_password=True)
    except ArgumentError:
        return "(an unparsable DATABASE_URL)"


def sqlite_file(url: object) -> Path | None:
    """The file of a SQLite URL (None for other databases and in-memory SQLite)."""
    parsed = make_url(str(url))
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database or "")


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


def schema_problem(engine: Engine) -> str | None:
    """None when the database is reachable and Recap's tables are at the head;
    otherwise one line naming the URL (no password), what is wrong and the command
    that fixes it. Creates nothing (a missing SQLite file is reported, not created)."""
    where = f"database {safe_url(engine.url)}"
    path = sqlite_file(engine.url)
    if path is not None and not path.is_file():
        return f"{where}: the file does not exist: run `{UPGRADE}` to create it"
    try:
        versions = read_database(engine)
    except DBAPIError as exc:
        first = (str(exc.orig) if exc.orig is not None else str(exc)).strip().splitlines()
        reason = first[0] if first else type(exc).__name__
        return (f"{where}{UNREACHABLE}{reason}): start it or correct DATABASE_URL, "
                f"then `{UPGRADE}`")
    except SQLAlchemyError as exc:
        return (f"{where}{UNREACHABLE}{type(exc).__name__}): start it or correct "
                f"DATABASE_URL, then `{UPGRADE}`")
    return version_problem(versions, where=where)


def version_problem(versions: Versions, *, where: str) -> str | None:
    """:func:`schema_problem`'s verdict on what the database records (None: at the head)."""
    heads = head_revisions()
    current = versions.recap
    if current == heads:
        return None
    if versions.legacy:
        return (f"{where}: an older Recap recorded its revision {_revs(versions.legacy)} in "
                f"{SHARED_VERSION_TABLE}: run `{UPGRADE}` to move it to {VERSION_TABLE}"
                + ("" if versions.legacy == heads else f" and migrate to {_revs(heads)}"))
    if not current:
        beside = (f"; {another_history(versions)}" if versions.other else "")
        return f"{where} has no Recap tables (never migrated{beside}): run `{UPGRADE}`"
    unknown = [rev for rev in current if rev not in known_revisions()]
    if unknown:
        return (f"{where}: Recap's schema is at migration {_revs(tuple(unknown))}, which "
                f"this Recap does not know (migrated by a newer Recap?): upgrade Recap to "
                f"that version")
    return (f"{where}: Recap's schema is at migration {_revs(current)}, this Recap "
            f"needs {_revs(heads)}: run `{UPGRADE}`")


def another_history(versions: Versions) -> str:
    """What alembic_version holds when it is another history's (an app's)."""
    return (f"{SHARED_VERSION_TABLE} belongs to another Alembic history (revision "
            f"{_revs(versions.other)}), not Recap's: left alone")


def _revs(revisions: tuple[str, ...]) -> str:
    return ", ".join(revisions)


@functools.cache
def known_revisions() -> frozenset[str]:
    """Every revision of Recap's migrations, head or not."""
    return frozenset(s.revision for s in ScriptDirectory(str(script_location())).walk_revisions())


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate ``url`` to ``revision`` (a SQLite file and its folder are created)."""
    # Alembic's command module (autogenerate, templates) is needed only to migrate,
    # never to check a schema: loaded here, not by every process that reads one.
    from alembic import command

    path = sqlite_file(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    """Migrate ``url`` back to ``revision`` (``base``: drop every Recap table);
    what later migrations added is dropped with its rows."""
    from alembic import command

    command.downgrade(alembic_config(url), revision)


def is_embedded_default(url: str) -> bool:
    """Whether ``url`` is the embedded default (no DATABASE_URL given)."""
    return url == DEFAULT_DATABASE_URL


def ensure_schema(engine: Engine, *,
                  announce: Callable[[str], None] | None = None) -> None:
    """Refuse a database that is unreachable or not at the head (DatabaseNotReady,
    one line). The embedded default is Recap's own: it is created and migrated
    here, and ``announce`` (a warning in the log by default) says where, once."""
    url = engine.url.render_as_string(hide_password=False)
    if is_embedded_default(url):
        problem = schema_problem(engine)
        if problem is None:
            return
        path = sqlite_file(url)
        created = path is not None and not path.exists()
        upgrade(url)
        say = announce or log.warning
        verb = "created" if created else "migrated"
        say(f"DATABASE_URL is not set: {verb} the embedded SQLite database {path} "
            "(set DATABASE_URL to use PostgreSQL)")
    problem = schema_problem(engine)
    if problem is not None:
        raise DatabaseNotReady(problem, unreachable=UNREACHABLE in problem)


# PostgreSQL URLs this process found at the head, for the asyncio API.
_READY: set[str] = set()


async def ensure_schema_once(url: str) -> None:
    """:func:`ensure_schema` for the asyncio API's database, once per process and URL
    (off the event loop, through psycopg's sync driver whatever driver ``url`` names);
    a failed check is made again on the next call."""
    if url in _READY:
        return
    await asyncio.to_thread(_ensure_sync, url)
    _READY.add(url)


def _ensure_sync(url: str) -> None:
    sync_url = make_url(url).set(drivername="postgresql+psycopg")
    engine = make_engine(sync_url.render_as_string(hide_password=False), poolclass=NullPool)
    try:
        ensure_schema(engine)
    finally:
        engine.dispose()
