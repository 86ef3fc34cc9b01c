"""What /readyz checks, in process: the schema against the migrations the package
carries (recap.migrate, the same check every entry point makes) and the broker."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine

from recap.db import get_engine
from recap.http import ready
from tests.env import PG_ADMIN

pytestmark = pytest.mark.system


def test_a_migrated_database_is_ready() -> None:
    assert ready.schema_problem(get_engine()) is None
    assert ready.database_problem() is None
    assert ready.broker_problem() is None


def test_a_database_without_recap_tables_names_the_fix() -> None:
    admin = create_engine(PG_ADMIN)  # read only: it has none of Recap's tables
    try:
        problem = ready.schema_problem(admin)
    finally:
        admin.dispose()
    assert problem is not None and "never migrated" in problem
    assert problem.endswith("run `recap db upgrade`")


def test_an_unreachable_database_says_so() -> None:
    engine = create_engine("postgresql+psycopg://postgres@127.0.0.1:1/recap")
    try:
        problem = ready.schema_problem(engine)
    finally:
        engine.dispose()
    assert problem is not None and " is unreachable (" in problem
