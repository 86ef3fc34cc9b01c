"""What /readyz checks, in process: the schema against the migrations (or, installed
without them, against the models' tables) and the broker."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine

from tests.env import PG_ADMIN
from worker.db import get_engine
from worker.http import ready


def test_a_migrated_database_is_ready() -> None:
    assert ready.schema_problem(get_engine()) is None
    assert ready.broker_problem() is None


def test_without_the_migrations_directory_the_tables_are_checked(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ready, "MIGRATIONS", tmp_path / "absent")
    assert ready.schema_problem(get_engine()) is None
    admin = create_engine(PG_ADMIN)  # read only: it has none of Recap's tables
    try:
        problem = ready.schema_problem(admin)
    finally:
        admin.dispose()
    assert problem is not None and "chat_sessions" in problem and "alembic upgrade head" in problem


def test_an_unreachable_database_says_so() -> None:
    engine = create_engine("postgresql+psycopg://postgres@127.0.0.1:1/recap")
    try:
        problem = ready.schema_problem(engine)
    finally:
        engine.dispose()
    assert problem is not None and problem.startswith("database unreachable")
