"""Engines and transactions. One engine per process, built lazily from settings.

Functions elsewhere take ``*, session`` and never commit; the service functions
own their transactions through :func:`transaction`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for ``url`` with the per-dialect settings Recap relies on."""
    if url.startswith("sqlite"):
        import sqlite3

        if sqlite3.sqlite_version_info < (3, 35):
            from worker.errors import ConfigError

            raise ConfigError(f"SQLite {sqlite3.sqlite_version} is too old for DATABASE_URL="
                              f"{url}: Recap needs 3.35+ (UPDATE/DELETE ... RETURNING)")
        engine = create_engine(url, connect_args={"timeout": 30}, **kwargs)
        _configure_sqlite(engine)
        return engine
    return create_engine(url, pool_pre_ping=True, **kwargs)


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event below issue BEGIN itself.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")  # chat_messages cascade with their session
        cur.execute("PRAGMA journal_mode=WAL")  # readers do not block the writer
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # Take the write lock up front: two transactions that read then write
        # would otherwise deadlock on the lock upgrade instead of queueing.
        conn.exec_driver_sql("BEGIN IMMEDIATE")


_FACTORIES: dict[str, sessionmaker[Session]] = {}


def session_factory() -> sessionmaker[Session]:
    """The process's session factory for the configured DATABASE_URL."""
    from worker.settings import get_settings

    settings = get_settings()
    url = settings.database_url
    factory = _FACTORIES.get(url)
    if factory is None:
        pool = ({} if url.startswith("sqlite") else
                {"pool_size": settings.db_pool_size, "max_overflow": settings.db_max_overflow})
        factory = _FACTORIES[url] = sessionmaker(make_engine(url, **pool),
                                                 expire_on_commit=False)
    return factory


def get_engine() -> Engine:
    engine = session_factory().kw["bind"]
    assert isinstance(engine, Engine)
    return engine


def reset_engines(*, close: bool = True) -> None:
    """Drop pooled connections and cached engines (after fork: ``close=False``)."""
    for factory in _FACTORIES.values():
        factory.kw["bind"].dispose(close=close)
    _FACTORIES.clear()


@contextmanager
def transaction() -> Iterator[Session]:
    """A session in one transaction: commits on success, rolls back on error."""
    with session_factory()() as session, session.begin():
        yield session
