"""Building an engine: the per-dialect settings Recap relies on (SQLite's locking,
PostgreSQL's dead-connection check). Below the database layer and migrations,
which both build engines here."""

from __future__ import annotations

import select
import sqlite3
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import DisconnectionError

from recap.errors import ConfigError


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for ``url`` with the per-dialect settings Recap relies on."""
    if url.startswith("sqlite"):
        if sqlite3.sqlite_version_info < (3, 35):
            raise ConfigError(f"SQLite {sqlite3.sqlite_version} is too old for DATABASE_URL="
                              f"{url}: Recap needs 3.35+ (UPDATE/DELETE ... RETURNING)")
        engine = create_engine(url, connect_args={"timeout": 30}, hide_parameters=True,
                               **kwargs)
        _configure_sqlite(engine)
        return engine
    engine = create_engine(url, hide_parameters=True, **kwargs)
    refuse_closed_by_server(engine)
    return engine


def refuse_closed_by_server(engine: Engine) -> None:
    """Have ``engine``'s pool discard, on checkout, a connection the server closed
    (see :func:`closed_by_server`): a dead-connection check without a round trip."""
    event.listen(engine, "checkout", _refuse_closed_by_server)


def _refuse_closed_by_server(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
    # Instead of pool_pre_ping's SELECT 1 (a round trip on every checkout, a third
    # of add_message's time): an idle PostgreSQL connection receives nothing unless
    # the server ends it (pg_terminate_backend, a restart, idle timeouts send a
    # FATAL notice and close the socket), so a readable socket means a dead
    # connection. DisconnectionError makes the pool discard it and connect anew.
    # A connection lost without a word (a cable cut) fails its first statement
    # after the TCP timeout; pre-ping's SELECT 1 would hang on it just the same.
    # A false alarm (unexpected bytes on a live connection) only costs a reconnect.
    # The asyncio engine's connection wraps the driver's (driver_connection).
    if closed_by_server(getattr(dbapi_conn, "driver_connection", dbapi_conn)):
        raise DisconnectionError("the server closed this pooled connection")


def closed_by_server(dbapi_conn: Any) -> bool:
    """True if an idle pooled connection is closed or has data waiting (which, idle,
    only a server ending the connection sends). One poll(2), no round trip."""
    if getattr(dbapi_conn, "closed", False) or getattr(dbapi_conn, "broken", False):
        return True
    try:
        poller = select.poll()
        poller.register(dbapi_conn.fileno(), select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no socket any more
        return True


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
