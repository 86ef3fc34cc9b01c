"""Helpers shared by the ``recap`` command tests (fixtures live in conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import delete, func, select

from recap import db
from recap.cli import main
from recap.errors import PermanentLLMError
from recap.models import ChatSession, TitleRun
from recap.testing import error
from recap.worker.jobs.outcome import Job, Outcome
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from tests.env import API_KEY, FAKE
from tests.helpers import seed, statuses


def run_inline(session_id: str) -> Outcome:
    return summarize(session_id, job=Job(task_id="t-cli"), res=get_resources())


def make_dead(session_id: str, *, n: int = 12) -> None:
    """A session whose last run is dead: a 401 whose message even carries the key."""
    seed(session_id, n)
    FAKE.always(error(401, f"invalid x-api-key {API_KEY}"))
    with pytest.raises(PermanentLLMError):
        run_inline(session_id)
    FAKE.always(None)
    assert statuses(session_id)[-1] == "dead"


def idle() -> bool:
    """No queued or running job anywhere (so no job outlives its test)."""
    with db.transaction() as s:
        busy = s.scalar(select(func.count()).select_from(ChatSession).where(
            ChatSession.enqueued_at.isnot(None) | ChatSession.lease_token.isnot(None)))
    return busy == 0


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def no_title_runs() -> Iterator[None]:
    """title_runs is not among the tables the shared fixture empties: start and end empty."""
    with db.transaction() as s:
        s.execute(delete(TitleRun))
    yield
    with db.transaction() as s:
        s.execute(delete(TitleRun))
