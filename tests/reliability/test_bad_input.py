"""Bad and extreme input: unknown or invalid session ids given to the task, text
add_message must refuse, a 1 MB message, a 10,000-message backlog, prompt
injection, and a broken prompt template at start-up."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from recap.api.ingest import add_message
from recap.db import transaction
from recap.errors import InvalidInput
from recap.models import ChatMessage, ChatSession
from recap.testing import FakeAnthropic
from recap.worker.celery_app import app
from tests.helpers import (
    assert_invariants,
    message_ids,
    run_and_wait,
    runs,
    seed,
    session_row,
    statuses,
    wait_for,
)
from tests.reliability.common import (
    low_thresholds,  # noqa: F401
    worker_thread,
)

pytestmark = pytest.mark.system


def send(session_id: object) -> None:
    """Publish one summarize job by name, whatever the id (nothing imports recap.worker.tasks)."""
    app.send_task("recap.tasks.summarize_session", (session_id,))


def count_rows() -> tuple[int, int]:
    with transaction() as s:
        return (s.scalar(select(func.count()).select_from(ChatMessage)) or 0,
                s.scalar(select(func.count()).select_from(ChatSession)) or 0)


# -- ids the task cannot use ----------------------------------------------------

@worker_thread
@pytest.mark.parametrize(("given", "recorded", "why"), [
    ("no-such-session", "no-such-session", "not found"),
    (12345, "12345", "must be a str, got int"),  # not a str: recorded by its repr
    (None, "None", "must be a str, got NoneType"),
    # longer than the column: rejected, and the audit row keeps 255 characters
    ("x" * 300, "x" * 255, "at most 255"),
])
def test_unknown_session_is_skipped_with_reason(given: object, recorded: str, why: str,
                                                fake_api: FakeAnthropic) -> None:
    ids = seed("healthy", 12)
    send(given)
    wait_for(lambda: runs(recorded), what=f"the run of {recorded[:20]!r}")
    (run,) = runs(recorded)
    assert run.status == "skipped" and why in (run.reason or "")
    assert fake_api.requests == []
    # The worker is unharmed: the next real job is applied.
    run_and_wait("healthy")
    assert statuses("healthy") == ["applied"]
    assert_invariants({"healthy": ids})


@worker_thread
@pytest.mark.parametrize("given", ["bad\x00id", "bad\ud800id"])
def test_invalid_session_id_is_skipped_with_reason(given: str) -> None:
    send(given)
    wait_for(lambda: [r for r in runs() if r.status == "skipped"], timeout=8,
             what="a skipped run for the invalid id")
    (run,) = runs()
    assert "session_id" in (run.reason or "") and run.attempt == 1


# -- text add_message refuses ------------------------------------------------------

BAD_CONTENT = [
    ("", "empty"),
    ("   \n\t \r\n", "whitespace"),
    ("before\x00after", "NUL"),
    ("lone \ud800 surrogate", "surrogate"),
    (b"raw bytes", "content must be a str, got bytes"),
    (None, "content must be a str, got NoneType"),
    (["a list"], r"content\[0\]: Input should be a valid dictionary"),  # a content array
]


@pytest.mark.parametrize(("content", "problem"), BAD_CONTENT)
def test_bad_content_is_refused_and_nothing_written(content: Any, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        add_message("s1", "user", content)
    assert count_rows() == (0, 0)


@pytest.mark.parametrize(("content", "problem"), BAD_CONTENT)
def test_bad_content_in_callers_transaction_writes_nothing(content: Any,
                                                           problem: str) -> None:
    # The caller's transaction goes on: the refused message left nothing behind.
    with transaction() as s:
        good = add_message("s2", "user", "a good message", db=s)
        with pytest.raises(InvalidInput, match=problem):
            add_message("s2", "assistant", content, db=s)
    assert message_ids("s2") == [good]
    row = session_row("s2")
    assert row is not None and row.message_count == 1
    assert_invariants({"s2": [good]})


@pytest.mark.parametrize(("session_id", "problem"), [
    ("", "empty"), ("  ", "empty"), ("a\x00b", "NUL"), ("\udc80", "surrogate"),
    (b"s", "must be a str"), ("x" * 256, "at most 255"),
])
def test_bad_session_id_is_refused(session_id: Any, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        add_message(session_id, "user", "hello")
    assert count_rows() == (0, 0)
