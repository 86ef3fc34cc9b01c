"""One revision chain builds everything, downgrades cleanly, and matches the models."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from recap.models import Base, modelled
from tests.env import PG_ADMIN, _admin_execute, migrate


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
                                                        "include_name": modelled})
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
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    engine.dispose()
