"""recap/db.py: engines never let statement parameters (chat text) into errors."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from recap.api.ingest import add_message
from recap.db import make_engine, scrub, transaction
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from tests.env import TEST_ENV
from tests.helpers import runs, seed

SECRET = "card PIN 4921-7730"


@pytest.mark.parametrize("url", [TEST_ENV["DATABASE_URL"], "sqlite://"],
                         ids=["postgresql", "sqlite"])
def test_a_database_error_does_not_carry_its_parameters(url: str) -> None:
    engine = make_engine(url)
    try:
        with engine.connect() as conn, pytest.raises(DBAPIError) as caught:
            conn.execute(text("SELECT CAST(:value AS INTEGER) + no_such_column"),
                         {"value": SECRET})
    finally:
        engine.dispose()
    shown = f"{caught.value}\n{caught.value!r}"
    assert SECRET not in shown
    assert "hide_parameters" in shown  # SQLAlchemy says what it left out


@pytest.fixture
def summary_refused() -> Iterator[None]:
    """A constraint that makes the apply fail on the summary's own text."""
    with transaction() as s:
        s.execute(text("ALTER TABLE chat_sessions ADD CONSTRAINT test_no_pin "
                       "CHECK (rolling_summary NOT LIKE '%4921%')"))
    yield
    with transaction() as s:
        s.execute(text("ALTER TABLE chat_sessions DROP CONSTRAINT test_no_pin"))


def test_an_apply_that_fails_in_the_database_leaks_no_chat_text(
        settings_env: Callable[..., None], summary_refused: None) -> None:
    settings_env(RECAP_POLICY="threshold", RECAP_TRIGGER_MESSAGES=4, RECAP_TRIGGER_TOKENS=10,
                 RECAP_BATCH_SIZE=3, RECAP_KEEP_RECENT=2)
    add_message("leak", "user", f"my {SECRET}, keep it safe")  # in the first batch
    seed("leak", 8)
    with pytest.raises(DBAPIError) as caught:
        summarize("leak", job=Job(task_id="t-leak"), res=get_resources())
    # The task scrubs what it raises: Celery logs str() and the traceback (with
    # its chained causes), the task-failed event (Flower) carries repr().
    exc = scrub(caught.value)
    shown = "".join(traceback.format_exception(exc)) + repr(exc)
    assert "4921" not in shown and "check constraint" in shown
    (run,) = runs("leak")
    assert run.status == "dead" and "IntegrityError" in (run.error or "")
    assert "4921" not in (run.error or "") and "4921" not in (run.reason or "")
