"""Alembic environment: the URL comes from Recap's settings (DATABASE_URL); the
revision lives in Recap's own version table (recap.revisions.VERSION_TABLE), so an
app's Alembic history can share the database."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from logging.config import fileConfig

from alembic import context
from sqlalchemy import Connection

from recap.db import make_engine
from recap.models import Base, modelled
from recap.revisions import VERSION_TABLE, adopt_legacy_version, lock_migrations
from recap.settings import get_settings

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def _url() -> str:
    return config.attributes.get("url") or get_settings().database_url


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True,
                      compare_type=True, include_name=modelled, version_table=VERSION_TABLE,
                      render_as_batch=_url().startswith("sqlite"))
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(_url())
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


def _run(connection: Connection) -> None:
    # One transaction holds the move of an older Recap's revision and every
    # migration after it (on SQLite too): a failed upgrade leaves both as they were.
    with _transaction(connection):
        lock_migrations(connection)  # another upgrade at once: its turn first
        adopt_legacy_version(connection)
        context.configure(connection=connection, target_metadata=target_metadata,
                          compare_type=True, include_name=modelled,
                          version_table=VERSION_TABLE,
                          render_as_batch=connection.dialect.name == "sqlite")
        with context.begin_transaction():
            context.run_migrations()


def _transaction(connection: Connection) -> AbstractContextManager[object]:
    # A connection handed in already inside a transaction is its owner's to commit.
    return nullcontext() if connection.in_transaction() else connection.begin()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
