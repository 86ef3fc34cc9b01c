"""The schema: Alembic run from the installed package, and the check every entry
point makes before it touches a row.

The migrations are the package ``recap.migrations`` (the folder
``recap/migrations/``, shipped in the wheel as it is).

Recap's revisions, and the version table of its own an app's Alembic history
shares the database with, are recap.revisions; the names an app or a command
uses are re-exported here.

Every refusal is one line: the URL without its password, what is wrong, and the
command that fixes it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from alembic.config import Config
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from recap.engines import make_engine
from recap.errors import DatabaseNotReady
from recap.revisions import (
    SHARED_VERSION_TABLE,
    VERSION_TABLE,
    Versions,
    adopt_legacy_version,
    another_history,
    current_revisions,
    head_revisions,
    join_revisions,
    known_revisions,
    outside_recap,
    read_database,
    read_versions,
    script_location,
)
from recap.settings import DEFAULT_DATABASE_URL

__all__ = ["SHARED_VERSION_TABLE", "UNREACHABLE", "UPGRADE", "VERSION_TABLE", "Versions",
           "adopt_legacy_version", "alembic_config", "another_history", "current_revisions",
           "downgrade", "ensure_schema", "ensure_schema_once", "head_revisions",
           "is_embedded_default", "known_revisions", "outside_recap", "read_database",
           "read_versions", "safe_url", "schema_problem", "script_location", "sqlite_file",
           "upgrade", "version_problem"]

log = logging.getLogger("recap.migrate")

UPGRADE = "recap db upgrade"
UNREACHABLE = " is unreachable ("

def alembic_config(url: str) -> Config:
    """An Alembic configuration for ``url`` that needs no alembic.ini."""
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    cfg.set_main_option("path_separator", "os")
    cfg.attributes["url"] = url
    cfg.attributes["configure_logger"] = False
    return cfg


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
    heads, current, revs = head_revisions(), versions.recap, join_revisions
    if current == heads:
        return None
    if versions.legacy:
        return (f"{where}: an older Recap recorded its revision {revs(versions.legacy)} in "
                f"{SHARED_VERSION_TABLE}: run `{UPGRADE}` to move it to {VERSION_TABLE}"
                + ("" if versions.legacy == heads else f" and migrate to {revs(heads)}"))
    if not current:
        beside = (f"; {another_history(versions)}" if versions.other else "")
        return f"{where} has no Recap tables (never migrated{beside}): run `{UPGRADE}`"
    unknown = tuple(rev for rev in current if rev not in known_revisions())
    if unknown:
        return (f"{where}: Recap's schema is at migration {revs(unknown)}, which this Recap "
                f"does not know (migrated by a newer Recap?): upgrade Recap to that version")
    return (f"{where}: Recap's schema is at migration {revs(current)}, this Recap needs "
            f"{revs(heads)}: run `{UPGRADE}`")


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
