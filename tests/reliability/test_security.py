"""Security: the API key stays secret, Flower is never shipped without auth, SQL is
only ever parameterized, and one session's job never touches another's rows."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from recap.db import transaction
from recap.errors import ConfigError, PermanentLLMError
from recap.models import SummaryRun
from recap.settings import load_settings
from recap.testing import FakeAnthropic, error, ok
from recap.worker.celery_app import app
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from tests.env import API_KEY
from tests.helpers import as_dict, assert_invariants, run_and_wait, seed, statuses, wait_for
from tests.reliability.common import (
    low_thresholds,  # noqa: F401
    worker_thread,
)

pytestmark = pytest.mark.system

LOGGERS = ("recap", "celery", "anthropic", "httpx2", "httpx", "httpcore", "kombu")


# -- the API key -----------------------------------------------------------------------

class Published:
    """Every task message this process publishes (the hook's, the retries', the CLI's)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def __call__(self, body: Any = None, headers: Any = None, **_: Any) -> None:
        self.messages.append({"body": body, "headers": headers})


class EventCapture:
    """Every event on the broker's event exchange, as Flower would receive it."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.ready = threading.Event()
        self.receiver: Any = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with app.connection_for_read() as conn:
            self.receiver = app.events.Receiver(conn, handlers={"*": self.events.append})
            consume_ready = self.receiver.on_consume_ready

            def on_ready(*args: Any, **kwargs: Any) -> None:
                consume_ready(*args, **kwargs)
                self.ready.set()

            self.receiver.on_consume_ready = on_ready
            self.receiver.capture(limit=None, timeout=None, wakeup=False)

    def __enter__(self) -> EventCapture:
        self.thread.start()
        assert self.ready.wait(15), "the event receiver did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self.receiver.should_stop = True
        self.thread.join(15)


@pytest.fixture
def captured(caplog: pytest.LogCaptureFixture) -> Iterator[tuple[Published, EventCapture]]:
    from celery.signals import before_task_publish

    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    published = Published()
    before_task_publish.connect(published, weak=False)
    try:
        with EventCapture() as events:
            yield published, events
    finally:
        before_task_publish.disconnect(published)


def all_text_of_runs() -> list[str]:
    with transaction() as s:
        return [str(v) for r in s.scalars(select(SummaryRun)) for v in as_dict(r).values()
                if v is not None]


def leaks(values: list[Any]) -> list[str]:
    return [str(v)[:200] for v in values if API_KEY in json.dumps(v, default=str)]


@worker_thread
def test_api_key_never_leaves_the_sdk(fake_api: FakeAnthropic, captured: Any,
                                      caplog: pytest.LogCaptureFixture) -> None:
    published, events = captured
    failing, fine = seed("key-fail", 12), seed("key-ok", 12)
    fake_api.always(error(401, "invalid x-api-key"))
    run_and_wait("key-fail")
    fake_api.always(None)
    fake_api.script(error(500), ok("A summary."))  # a retry republishes the message
    run_and_wait("key-ok")
    wait_for(lambda: any(e.get("type") == "task-succeeded" for e in events.events),
             timeout=15, what="the task-succeeded event")

    sent = fake_api.headers[0]  # the key was really in use
    assert sent.get("authorization") == f"Bearer {API_KEY}" or sent.get("x-api-key") == API_KEY
    assert statuses("key-fail") == ["dead"] and statuses("key-ok") == ["failed", "applied"]
    # Logs, at DEBUG, from Recap, Celery, the SDK and its HTTP stack (non-vacuous:
    # the job lines and the SDK's request lines are there).
    names = {r.name for r in caplog.records}
    assert "recap.worker.jobs" in names and any(n.startswith(("anthropic", "httpx")) for n in names)
    assert API_KEY not in caplog.text
    assert leaks([r.getMessage() for r in caplog.records]) == []
    # Audit rows, every column.
    assert all(API_KEY not in text for text in all_text_of_runs())
    # Task messages: only the session id travels; results are not kept anywhere.
    assert len(published.messages) >= 3  # two jobs and one retry
    for m in published.messages:
        args, kwargs, _ = m["body"]
        assert len(args) == 1 and args[0] in ("key-fail", "key-ok") and kwargs == {}
    assert leaks(published.messages) == []
    task = app.tasks["recap.tasks.summarize_session"]  # the worker loaded recap.worker.tasks
    assert app.conf.task_ignore_result is True and task.ignore_result is True
    assert not app.conf.result_backend
    # Events, as Flower receives them: task and Recap's own events, every field.
    kinds = {e.get("type") for e in events.events}
    assert {"task-sent", "task-failed", "task-retried", "task-succeeded",
            "summarization-failed", "summarization-complete"} <= kinds, kinds
    assert leaks(events.events) == []
    assert_invariants({"key-fail": failing, "key-ok": fine})


def test_exceptions_and_settings_do_not_carry_the_key(fake_api: FakeAnthropic) -> None:
    ids = seed("key-exc", 12)
    fake_api.always(error(401, "invalid x-api-key"))
    res = get_resources()
    with pytest.raises(PermanentLLMError) as info:
        summarize("key-exc", job=Job(), res=res)
    chain: list[BaseException] = []
    exc: BaseException | None = info.value
    while exc is not None:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    assert len(chain) >= 2  # the mapped error and the SDK's
    assert all(API_KEY not in f"{e} {e!r}" for e in chain)
    assert API_KEY not in repr(res.settings) and API_KEY not in repr(res)
    assert API_KEY not in repr(res.summarizer) and API_KEY not in repr(res.client)
    with pytest.raises(ConfigError) as bad:
        load_settings(batch_size=0)
    assert "RECAP_BATCH_SIZE" in str(bad.value) and API_KEY not in str(bad.value)
    assert_invariants({"key-exc": ids})


@worker_thread
def test_key_echoed_by_the_server_is_redacted_everywhere(
        fake_api: FakeAnthropic, captured: Any, caplog: pytest.LogCaptureFixture) -> None:
    _, events = captured
    seed("key-echo", 12)
    fake_api.always(error(401, f"invalid x-api-key: {API_KEY}"))
    run_and_wait("key-echo")
    wait_for(lambda: any(e.get("type") == "task-failed" for e in events.events),
             timeout=15, what="the task-failed event")
    assert all(API_KEY not in text for text in all_text_of_runs())
    assert leaks(events.events) == []
    assert API_KEY not in caplog.text
