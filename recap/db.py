"""Engines and transactions. One engine per process, for the database an edge
hands down with :func:`use_database` (the worker at start, the CLI's main, the
demo and ``recap eval``); a library call made before any edge did (the app's
first call) reads the validated settings once, and that call is the app's edge.

Row helpers take the database session first (``db``) and never commit; the job
and API functions own their transactions through :func:`transaction`. Engines
hide statement parameters: a database error must never carry chat text into
logs, Celery events or Flower.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeAlias

from sqlalchemy import Connection, CursorResult, Engine, Result, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from recap.engines import make_engine
from recap.migrate import ensure_schema
from recap.settings import get_settings

# What a row helper runs its statements on: an ORM session, or a Core connection
# (:func:`core_transaction`); the helpers use only what both have.
Db: TypeAlias = Session | Connection


@dataclass(frozen=True)
class DatabaseOptions:
    """What the process's engine is built from."""

    url: str
    pool_size: int = 5
    max_overflow: int = 10

    @classmethod
    def of(cls, settings: Any) -> DatabaseOptions:
        """The options a validated ``Settings`` names."""
        return cls(settings.database_url, settings.db_pool_size, settings.db_max_overflow)


_FACTORIES: dict[str, sessionmaker[Session]] = {}
_OPTIONS: list[DatabaseOptions] = []  # the one handed down, if any


def use_database(options: DatabaseOptions | None) -> None:
    """Hand this process its database; None forgets it (the next call reads the
    settings again). Engines already built for another URL stay until
    :func:`reset_engines`."""
    _OPTIONS[:] = [] if options is None else [options]


def database_options() -> DatabaseOptions:
    """The database handed down, or the settings' (validated once) at the app's first call."""
    if _OPTIONS:
        return _OPTIONS[0]
    return DatabaseOptions.of(get_settings())


def session_factory() -> sessionmaker[Session]:
    """The process's session factory for its database."""
    options = database_options()
    url = options.url
    factory = _FACTORIES.get(url)
    if factory is None:
        pool = ({} if url.startswith("sqlite") else
                {"pool_size": options.pool_size, "max_overflow": options.max_overflow})
        engine = make_engine(url, **pool)
        try:
            # The first use refuses a database that is unreachable or not at the
            # migration head, in one line (the embedded default is migrated here);
            # the next call checks again, so a database fixed meanwhile is used.
            ensure_schema(engine)
        except BaseException:
            engine.dispose()
            raise
        factory = _FACTORIES[url] = sessionmaker(engine, expire_on_commit=False)
    return factory


def rowcount(result: Result[Any]) -> int:
    """Rows matched by an UPDATE/DELETE (typed: ``Result`` does not declare it)."""
    assert isinstance(result, CursorResult)
    return int(result.rowcount)


def get_engine() -> Engine:
    engine = session_factory().kw["bind"]
    assert isinstance(engine, Engine)
    return engine


def reset_engines(*, close: bool = True) -> None:
    """Drop pooled connections and cached engines (after fork: ``close=False``)."""
    for factory in _FACTORIES.values():
        factory.kw["bind"].dispose(close=close)
    _FACTORIES.clear()
    use_database(None)


@contextmanager
def autocommit_connection() -> Iterator[Connection]:
    """A connection whose every statement commits on its own, for a write that is one
    statement on PostgreSQL (no BEGIN and COMMIT round trips). SQLite, whose writes
    need BEGIN IMMEDIATE, gets a normal transaction committed at the end."""
    engine = get_engine()
    if engine.dialect.name == "sqlite":
        with engine.begin() as conn:
            yield conn
        return
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        yield conn


@contextmanager
def transaction() -> Iterator[Session]:
    """A session in one transaction: commits on success, rolls back on error."""
    with session_factory()() as session, session.begin():
        yield session


@contextmanager
def core_transaction() -> Iterator[Connection]:
    """A Core connection in one transaction: commits on success, rolls back on
    error. For the job's transactions, whose statements are all Core: an ORM
    session's own bookkeeping (its transaction, flush and close, each statement
    through the ORM's execute) costs a job more CPU than the statements."""
    with get_engine().begin() as conn:
        yield conn


def dialect_name(db: Db) -> str:
    """The database dialect ``db`` runs on (``postgresql``, ``sqlite``)."""
    return (db.get_bind() if isinstance(db, Session) else db).dialect.name


def scrub(exc: BaseException) -> BaseException:
    """``exc`` made safe to log and to send to Flower: a database error keeps only the
    driver's first line (PostgreSQL's DETAIL can quote the failing row, chat text
    included) and loses its chained driver exception. Other errors pass unchanged."""
    if isinstance(exc, DBAPIError) and exc.args and isinstance(exc.args[0], str):
        exc.args = (exc.args[0].splitlines()[0], *exc.args[1:])
        exc.__cause__ = exc.__context__ = None
        exc.__suppress_context__ = True
    return exc


def first_line(exc: DBAPIError) -> str:
    """The driver's own message, first line only (no SQL, no parameters, no DETAIL)."""
    return (str(exc.orig) if exc.orig is not None else str(exc)).splitlines()[0]


def utcnow() -> datetime:
    """Now, timezone-aware UTC: every timestamp Recap writes."""
    return datetime.now(UTC)


# The database's clock in PostgreSQL (see db_now; the asyncio API awaits it itself).
DB_NOW = text("SELECT now()")


def db_now(db: Db) -> datetime:
    """The database's clock, timezone-aware UTC: what leases, cool-downs and
    pending markers are written with and compared to, so workers whose own clocks
    disagree still agree on who holds a session. PostgreSQL's ``now()`` (the
    transaction's start); SQLite is one file on one host, whose processes share
    one clock, so there it is :func:`utcnow`."""
    if dialect_name(db) != "postgresql":
        return utcnow()
    return db.execute(DB_NOW).scalar_one().astimezone(UTC)


def on_server_clock(db: Db, now: datetime | None) -> bool:
    """Whether a statement should read the clock itself (PostgreSQL's ``now()``, the
    transaction's start: what :func:`db_now` reads) and return it, rather than bind
    ``now``: no clock was given and the database is PostgreSQL. Saves the
    ``SELECT now()`` round trip of its own."""
    return now is None and dialect_name(db) == "postgresql"


def _insert(db: Db) -> Any:
    dialect = dialect_name(db)
    make: Any = {"postgresql": pg_insert, "sqlite": sqlite_insert}.get(dialect)
    if make is None:
        raise NotImplementedError(f"no INSERT ... ON CONFLICT for {dialect}")
    return make


def insert_ignoring_duplicates(model: Any, rows: Sequence[dict[str, Any]], *,
                               db: Db, keys: Sequence[str]) -> None:
    """INSERT rows, skipping any that collide on the unique ``keys``."""
    if rows:
        db.execute(_insert(db)(model).values(list(rows))
                   .on_conflict_do_nothing(index_elements=list(keys)))


def insert_or_update(model: Any, row: dict[str, Any], *, db: Db,
                     keys: Sequence[str], changes: dict[str, Any],
                     where: Any = None) -> int:
    """INSERT ``row``, or apply ``changes`` to the existing row with the same ``keys``
    (one statement; it locks the row either way). With ``where``, an existing row
    not matching it is left alone. Returns the rows written (0 or 1)."""
    return rowcount(db.execute(_insert(db)(model).values(row).on_conflict_do_update(
        index_elements=list(keys), set_=changes, where=where)
        .execution_options(preserve_rowcount=True)))
