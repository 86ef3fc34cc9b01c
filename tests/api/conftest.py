"""Fixtures shared by the API tests."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from celery.signals import after_task_publish

from recap.api import aio
from recap.store.enqueue import BREAKER
from tests.api.common import Api, AsyncApi, SyncApi
from tests.api.test_ingest import _drop_connections


@pytest.fixture
def published() -> Iterator[list[str]]:
    """Session ids of every summarize job published during the test."""
    sent: list[str] = []

    def on_publish(sender: str | None = None, body: Any = None, **_: object) -> None:
        if sender == "recap.tasks.summarize_session":
            args = body[0] if isinstance(body, tuple) else body.get("args")
            sent.append(args[0])

    after_task_publish.connect(on_publish, weak=False)
    yield sent
    after_task_publish.disconnect(on_publish)


@pytest.fixture(params=["sync", "async"])
def api(request: pytest.FixtureRequest) -> Iterator[Api]:
    if request.param == "sync":
        yield SyncApi()
        return
    with asyncio.Runner() as runner:
        yield AsyncApi(runner)
        runner.run(aio.close())


@pytest.fixture
def sent() -> Iterator[list[tuple[str, str]]]:
    """(task name, session id) of every job published during the test."""
    jobs: list[tuple[str, str]] = []

    def on_publish(sender: str | None = None, body: Any = None, **_: object) -> None:
        args = body[0] if isinstance(body, tuple) else body.get("args")
        jobs.append((str(sender), args[0]))

    after_task_publish.connect(on_publish, weak=False)
    yield jobs
    after_task_publish.disconnect(on_publish)


@pytest.fixture
def broker_down(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Publishing goes to a closed port (as in tests/api/test_ingest.py)."""
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:1/0")  # nothing listens there
    _drop_connections()
    yield
    monkeypatch.undo()
    _drop_connections()
    BREAKER.reset()  # the failure paused publishing in this process
