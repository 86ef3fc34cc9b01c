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


def _index_definition(url: str) -> str:
    engine = create_engine(url)
    with engine.connect() as conn:
        found = conn.execute(text("SELECT indexdef FROM pg_indexes "
                                  "WHERE indexname = 'ix_archived_messages_search'")).scalar()
    engine.dispose()
    return str(found)


def test_a_downgrade_below_search_terms_refuses_while_a_long_message_is_archived(
        empty_pg: str) -> None:
    """The recall index before search_terms cannot hold a message of too many
    distinct words: the downgrade names them and changes nothing, then proceeds
    once they are gone."""
    migrate(empty_pg)
    assert "search_terms" in _index_definition(empty_pg)
    engine = create_engine(empty_pg)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO chat_sessions (id) VALUES ('long')"))
        conn.execute(text(
            "INSERT INTO archived_messages (id, session_id, role, content, token_count, "
            "created_at, run_id, search_terms) VALUES (1, 'long', 'user', "
            "(SELECT string_agg('w' || i, ' ') FROM generate_series(1, 200000) i), 1, now(), 1, "
            "'w1 w2')"))
    with pytest.raises(RuntimeError, match="1 archived message.* too long for the previous"):
        migrate(empty_pg, "0025_runs_by_model", down=True)
    assert "search_terms" in _index_definition(empty_pg)  # nothing changed
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM archived_messages"))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM archived_messages"))  # as the refusal says
    engine.dispose()
    migrate(empty_pg, "0025_runs_by_model", down=True)
    assert "search_terms" not in _index_definition(empty_pg)
    assert "fastupdate=off" in _index_definition(empty_pg)
