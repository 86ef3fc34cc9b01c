"""One revision chain builds everything, downgrades cleanly, and matches the models."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from recap.migrate import VERSION_TABLE
from recap.models import Base, modelled
from tests.env import PG_ADMIN, _admin_execute, migrate

pytestmark = pytest.mark.system


@pytest.fixture
def empty_pg() -> Iterator[str]:
    name = f"recap_mig_{uuid.uuid4().hex[:8]}"
    _admin_execute(f'CREATE DATABASE "{name}"')
    yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    _admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _diff(url: str) -> list[object]:
    engine = create_engine(url)
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True,
                                                        "include_name": modelled,
                                                        "version_table": VERSION_TABLE})
        diff = compare_metadata(ctx, Base.metadata)
    engine.dispose()
    return diff


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_upgrade_matches_models_and_downgrade_empties(backend: str, empty_pg: str,
                                                      tmp_path: Path) -> None:
    url = empty_pg if backend == "postgresql" else f"sqlite:///{tmp_path / 'm.sqlite3'}"
    migrate(url)
    assert _diff(url) == []
    engine = create_engine(url)
    tables = set(inspect(engine).get_table_names())
    assert {"chat_sessions", "chat_messages", "summary_runs"} <= tables
    engine.dispose()
    migrate(url, "base", down=True)
    engine = create_engine(url)
    assert set(inspect(engine).get_table_names()) <= {"recap_alembic_version"}
    engine.dispose()


def _index_options(url: str) -> object:
    engine = create_engine(url)
    with engine.connect() as conn:
        options = conn.execute(text("SELECT reloptions FROM pg_class "
                                    "WHERE relname = 'ix_archived_messages_search'")).scalar()
    engine.dispose()
    return options


def test_the_recall_index_has_no_pending_list(empty_pg: str) -> None:
    # A GIN pending list is read whole by every recall lookup (recap.store.lookback).
    migrate(empty_pg)
    assert _index_options(empty_pg) == ["fastupdate=off"]
    migrate(empty_pg, "0018_frozen_answers", down=True)
    assert _index_options(empty_pg) is None
