"""After a committed apply nothing may fail the task or skip the follow-up:
a failing event publish costs Flower a line, never the follow-up job.
A real in-process worker, Redis, PostgreSQL and the local Messages API server."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from celery.app.task import Task
from celery.signals import task_failure

from recap.testing import FakeAnthropic
from tests.helpers import LOW, assert_invariants, run_and_wait, seed, session_row, statuses

pytestmark = pytest.mark.usefixtures("celery_worker_thread")


@pytest.fixture
def failed_tasks() -> Iterator[list[str]]:
    """The ids of every task that ends in FAILURE during the test."""
    failed: list[str] = []

    def on_failure(task_id: str | None = None, **_: object) -> None:
        failed.append(str(task_id))

    task_failure.connect(on_failure, weak=False)
    yield failed
    task_failure.disconnect(on_failure)


def test_a_failing_event_publish_fails_nothing_and_the_follow_up_runs(
        fake_api: FakeAnthropic, settings_env: Callable[..., None],
        monkeypatch: pytest.MonkeyPatch, failed_tasks: list[str]) -> None:
    settings_env(**LOW)
    events: list[str] = []

    def broken_send_event(self: Task, type_: str, *args: object, **kwargs: object) -> None:
        events.append(type_)
        raise ConnectionError("event exchange unavailable")

    monkeypatch.setattr(Task, "send_event", broken_send_event)
    # 17 messages: the first job condenses 5 and leaves 12 (> 10), so its
    # follow-up condenses 5 more; 7 are left and nothing is due.
    ids = seed("events", 17)
    run_and_wait("events", n=2, final={"applied", "failed", "dead"}, timeout=30)
    assert statuses("events") == ["applied", "applied"]
    assert events.count("summarization-complete") == 2  # tried, failed, shrugged off
    assert failed_tasks == []
    row = session_row("events")
    assert row is not None and row.message_count == 7 and row.summary_version == 2
    assert len(fake_api.requests) == 2
    assert_invariants({"events": ids})
