"""The asyncio API (worker.api.aio): the sync API's scenarios run against both
implementations, then what only the async one promises: the caller's
AsyncSession, one engine per loop, and an event loop that a call never blocks."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from celery.signals import after_task_publish
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from models import ChatMessage, ChatSession
from tests.api.test_import_cost import forbidden, loaded_after
from tests.api.test_ingest import _drop_connections, count_rows
from tests.env import TEST_ENV
from tests.fake_anthropic import validate_messages_request
from tests.helpers import LOW, message_ids, seed, session_row
from worker.api import aio, context, ingest
from worker.db import transaction
from worker.errors import ConfigError, InvalidInput, SessionNotFound
from worker.jobs import enqueue
from worker.jobs.enqueue import BREAKER, SUMMARIZE_TASK, TITLE_TASK
from worker.llm.tokens import count_tokens


class SyncApi:
    """The sync API, as the scenarios call it."""

    name = "sync"
    add_message = staticmethod(ingest.add_message)
    after_reply = staticmethod(ingest.after_reply)
    build_context = staticmethod(context.build_context)


class AsyncApi:
    """The asyncio API, every call awaited on one event loop kept for the whole
    test (like an app's loop): its engine and pooled connections carry over."""

    name = "async"

    def __init__(self, runner: asyncio.Runner) -> None:
        self.run = runner.run

    def add_message(self, *args: Any, **kwargs: Any) -> int:
        return self.run(aio.add_message(*args, **kwargs))

    def after_reply(self, *args: Any, **kwargs: Any) -> bool:
        return self.run(aio.after_reply(*args, **kwargs))

    def build_context(self, *args: Any, **kwargs: Any) -> aio.Context:
        return self.run(aio.build_context(*args, **kwargs))


Api = SyncApi | AsyncApi


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


# -- the sync API's scenarios, against both -----------------------------------------

@pytest.mark.parametrize(("call", "args", "kwargs", "problem"), [
    ("add_message", ("s", "robot", "hi"), {}, "unknown role 'robot'"),
    ("add_message", ("s", "user", "  \n"), {}, "whitespace"),
    ("add_message", ("s", "user", "a\x00b"), {}, "NUL"),
    ("add_message", ("s", "user", b"bytes"), {}, "content must be a str"),
    ("add_message", ("s", "user", "hi"), {"pinned": "yes"}, "pinned must be a bool"),
    ("add_message", (42, "user", "hi"), {}, "session_id must be a str, got int"),
    ("build_context", ("",), {"system_prompt": "x"}, "session_id is empty"),
    ("build_context", ("s",), {"system_prompt": None}, "system_prompt must be a str"),
    ("build_context", ("s",), {"system_prompt": "bad \ud800"}, "not valid text"),
    ("after_reply", ("x" * 256,), {}, "at most 255"),
    ("after_reply", (None,), {}, "session_id must be a str"),
])
def test_bad_input_raises_invalid_input_and_writes_nothing(
        api: Api, call: str, args: tuple[Any, ...], kwargs: dict[str, Any],
        problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        getattr(api, call)(*args, **kwargs)
    assert count_rows() == (0, 0)


def test_an_unknown_session_has_no_context_and_queues_nothing(
        api: Api, sent: list[tuple[str, str]]) -> None:
    with pytest.raises(SessionNotFound, match="'nobody'"):
        api.build_context("nobody", system_prompt="")
    assert api.after_reply("nobody") is False
    assert count_rows() == (0, 0) and sent == []


def test_messages_keep_the_counters_exact_and_ids_increasing(api: Api) -> None:
    texts = [f"message number {i} about the Lisbon trip" for i in range(6)]
    ids = [api.add_message("counted", ("user", "assistant")[i % 2], t, pinned=i == 0)
           for i, t in enumerate(texts)]
    assert ids == sorted(ids) == message_ids("counted")
    row = session_row("counted")
    assert row is not None and row.message_count == 6
    assert row.active_tokens == sum(count_tokens(t) for t in texts)


def test_the_context_is_the_stored_window_and_a_valid_request(api: Api) -> None:
    for role, text in [("assistant", "Welcome back!"), ("user", "weather in Lisbon?"),
                       ("assistant", "calling weather"), ("tool", "18C sunny"),
                       ("system", "Reply in Portuguese."), ("user", "and tomorrow?")]:
        api.add_message("ctx", role, text)
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "ctx").values(
            rolling_summary="They planned Lisbon.", summary_tokens=5))
    ctx = api.build_context("ctx", system_prompt="You plan trips.")
    # The same answer as the sync API's, read back independently.
    assert ctx == context.build_context("ctx", system_prompt="You plan trips.")
    assert "They planned Lisbon." in ctx["system"] and "Reply in Portuguese." in ctx["system"]
    assert ctx["messages"][-1]["content"].endswith("18C sunny\n\nand tomorrow?")
    body = {"model": "claude-test", "max_tokens": 64, **aio.as_request(ctx)}
    assert validate_messages_request(body) is None


def test_the_hook_queues_one_job_once_the_thresholds_are_crossed(
        api: Api, settings_env: Callable[..., None], sent: list[tuple[str, str]]) -> None:
    settings_env(**LOW)
    for i in range(10):
        api.add_message("cross", ("user", "assistant")[i % 2], "word " * 30)
        assert api.after_reply("cross") is False
    api.add_message("cross", "user", "word " * 30)
    assert api.after_reply("cross") is True
    row = session_row("cross")
    assert row is not None and row.enqueued_at is not None  # the pending marker
    assert api.after_reply("cross") is False  # coalesced: a job is already pending
    assert sent == [(SUMMARIZE_TASK, "cross")]


def test_the_first_exchange_queues_one_title_job(
        api: Api, settings_env: Callable[..., None], sent: list[tuple[str, str]]) -> None:
    settings_env(RECAP_TITLES_ENABLED="true")
    api.add_message("titled", "user", "Can you help me plan a week in Lisbon?")
    assert api.after_reply("titled") is False
    assert sent == []
    api.add_message("titled", "assistant", "Gladly. When are you going?")
    assert api.after_reply("titled") is False  # no summary job...
    assert api.after_reply("titled") is False
    assert sent == [(TITLE_TASK, "titled")]  # ...and one title job, coalesced


def test_the_hook_never_raises_when_the_database_is_unreachable(
        api: Api, settings_env: Callable[..., None], caplog: pytest.LogCaptureFixture) -> None:
    seed("db-down", 3)
    settings_env(DATABASE_URL="postgresql+psycopg://postgres@127.0.0.1:1/nowhere")
    with caplog.at_level(logging.WARNING, logger="recap.ingest"):
        assert api.after_reply("db-down") is False
    assert "db-down" in caplog.text and "OperationalError" in caplog.text
    with pytest.raises(InvalidInput):  # a bad id is still the caller's bug
        api.after_reply("")


@pytest.mark.usefixtures("broker_down")
def test_with_the_broker_down_the_hook_logs_clears_the_marker_and_pauses(
        api: Api, settings_env: Callable[..., None], caplog: pytest.LogCaptureFixture) -> None:
    settings_env(**LOW, CELERY_BROKER_URL="redis://127.0.0.1:1/0")
    seed("outage", 11)
    with caplog.at_level(logging.WARNING, logger="recap.enqueue"):
        assert api.after_reply("outage") is False
    assert "outage" in caplog.text and "sweeper" in caplog.text
    row = session_row("outage")
    assert row is not None and row.enqueued_at is None  # the sweeper will queue it
    assert BREAKER.is_open()
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="recap.enqueue"):
        assert api.after_reply("outage") is False  # paused: does not even try
    assert "could not enqueue" not in caplog.text


# -- the caller's AsyncSession --------------------------------------------------------

def _async_session() -> tuple[AsyncSession, Any]:
    """A session on an engine of the test's own, as an app would have."""
    engine = aio.make_async_engine(TEST_ENV["DATABASE_URL"])
    return AsyncSession(engine, expire_on_commit=False), engine


def test_add_message_joins_the_callers_async_transaction() -> None:
    async def scenario() -> None:
        db, engine = _async_session()
        async with db:
            async with db.begin():
                await aio.add_message("tx", "user", "kept", db=db)
            await aio.add_message("tx", "user", "rolled back", db=db)
            assert len(message_ids("tx")) == 1  # not committed yet
            await db.rollback()
        await engine.dispose()
        await aio.close()

    asyncio.run(scenario())
    row = session_row("tx")
    assert row is not None and row.message_count == 1 and len(message_ids("tx")) == 1


def test_jobs_are_sent_after_the_outermost_async_commit_never_on_rollback(
        settings_env: Callable[..., None], sent: list[tuple[str, str]]) -> None:
    settings_env(**LOW)
    seed("tx-hook", 11)
    seed("rb-hook", 11)

    async def scenario() -> None:
        db, engine = _async_session()
        async with db:
            await aio.add_message("tx-hook", "assistant", "one more", db=db)
            assert await aio.after_reply("tx-hook", db=db) is True
            async with db.begin_nested():  # a SAVEPOINT released: must not send early
                await aio.add_message("tx-hook", "user", "inside a savepoint", db=db)
            await aio.close()  # would wait for any publish already scheduled
            assert sent == []
            await db.commit()
            await aio.close()  # the publish runs in the background: wait for it
            assert sent == [(SUMMARIZE_TASK, "tx-hook")]

            await aio.add_message("rb-hook", "assistant", "one more", db=db)
            assert await aio.after_reply("rb-hook", db=db) is True
            await db.rollback()
        await engine.dispose()
        await aio.close()

    asyncio.run(scenario())
    assert sent == [(SUMMARIZE_TASK, "tx-hook")]
    row = session_row("rb-hook")
    assert row is not None and row.enqueued_at is None  # the marker rolled back too


# -- engines --------------------------------------------------------------------------

def test_each_event_loop_gets_its_own_engine() -> None:
    # asyncio.run twice, the first without close(): the second loop must not use
    # connections opened on the first (closed) one.
    assert asyncio.run(aio.add_message("loops", "user", "first loop")) > 0

    async def second() -> int:
        try:
            return await aio.add_message("loops", "user", "second loop")
        finally:
            await aio.close()

    assert asyncio.run(second()) > 0
    assert len(message_ids("loops")) == 2
    asyncio.run(aio.close())  # nothing to close on a new loop
    assert not [loop for loop in aio._STATES if loop.is_closed()]


def test_a_non_postgresql_database_is_a_clear_config_error(
        settings_env: Callable[..., None], tmp_path: Any) -> None:
    settings_env(DATABASE_URL=f"sqlite:///{tmp_path}/recap.sqlite3")
    with asyncio.Runner() as runner:
        with pytest.raises(ConfigError, match="needs PostgreSQL.*asyncio.to_thread"):
            runner.run(aio.add_message("s", "user", "hi"))
        with pytest.raises(ConfigError, match="needs PostgreSQL"):
            runner.run(aio.build_context("s", system_prompt=""))
        assert runner.run(aio.after_reply("s")) is False  # never raises, like the sync hook
        runner.run(aio.close())
    # Any PostgreSQL URL gets psycopg's async driver (nothing connects here).
    url = aio.make_async_engine("postgresql://u:secret@db.example/chat").url
    assert url.drivername == "postgresql+psycopg" and url.database == "chat"


def test_the_async_api_loads_no_sdk_summarizer_jobs_or_celery_worker() -> None:
    modules = loaded_after("from worker.api import aio")
    assert "worker.api.aio" in modules and "sqlalchemy.ext.asyncio" in modules
    assert forbidden(modules) == []


# -- the event loop -------------------------------------------------------------------

class Ticker:
    """Ticks every ``period`` seconds on the loop and keeps the worst lateness: how
    long something held the loop."""

    def __init__(self, period: float = 0.002) -> None:
        self.period = period
        self.ticks = 0
        self.max_lag = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(self.period)
            self.max_lag = max(self.max_lag, loop.time() - before - self.period)
            self.ticks += 1

    async def __aenter__(self) -> Ticker:
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def ticks_pass(self, n: int) -> None:
        """Return once ``n`` more ticks have run (the loop is free meanwhile)."""
        target = self.ticks + n
        while self.ticks < target:
            await asyncio.sleep(self.period)


def test_a_stuck_broker_publish_does_not_stop_the_loop(
        settings_env: Callable[..., None], monkeypatch: pytest.MonkeyPatch) -> None:
    # No clock involved: while a publish is held inside the broker call, the loop
    # must keep ticking and serve other calls, then the hook completes.
    settings_env(**LOW)
    seed("stuck", 11)
    entered, release = threading.Event(), threading.Event()

    def held_send(task_name: str, session_id: str, *, task_id: str | None) -> None:
        entered.set()
        assert release.wait(60), "the test never released the publish"

    monkeypatch.setattr(enqueue, "_send", held_send)

    async def scenario() -> None:
        async with Ticker() as ticker:
            hook = asyncio.create_task(aio.after_reply("stuck"))
            assert await asyncio.to_thread(entered.wait, 60)
            await ticker.ticks_pass(5)
            await aio.add_message("other", "user", "served while the broker hangs")
            assert (await aio.build_context("other", system_prompt=""))["messages"]
            assert not hook.done()
            release.set()
            assert await hook is True
        await aio.close()

    try:
        asyncio.run(scenario())
    finally:
        release.set()


@pytest.mark.usefixtures("broker_down")
def test_the_loop_is_never_held_long_by_a_call(settings_env: Callable[..., None]) -> None:
    # Measured loop lag over warm calls, the hook's failing publish included (a
    # closed port: it fails fast, so this is about what else a call does on the
    # loop; the stuck-broker test above covers a slow broker, without a clock).
    # Here the calls hold the loop for about a millisecond at most (statement
    # compilation, result rows); the bound is 100 ms, far above that so a loaded
    # 2-core machine (a GC pause, another process's time slice) does not fail it,
    # and far below what the blocking calls it guards against cost on the loop's
    # thread: loading the tokenizer (hundreds of ms), a broker connect timeout (3 s).
    settings_env(**LOW, CELERY_BROKER_URL="redis://127.0.0.1:1/0")
    limit = 0.1

    async def calls(session_id: str) -> None:
        for i in range(11):
            await aio.add_message(session_id, ("user", "assistant")[i % 2], "word " * 40)
        await aio.build_context(session_id, system_prompt="You help.")
        assert await aio.after_reply(session_id) is False  # the publish fails, off the loop
        assert await aio.after_reply(session_id) is False  # paused: no publish at all

    async def scenario() -> float:
        await calls("warm-up")  # first use: the engine, psycopg's import, connections
        BREAKER.reset()
        async with Ticker() as ticker:
            await calls("measured")
            await ticker.ticks_pass(2)
        await aio.close()
        assert ticker.ticks > 0
        return ticker.max_lag

    lag = asyncio.run(scenario())
    assert BREAKER.is_open()  # the unreachable broker was really tried
    with transaction() as s:
        assert s.scalar(select(func.count()).select_from(ChatMessage)
                        .where(ChatMessage.session_id == "measured")) == 11
    assert lag < limit, f"a call held the event loop for {lag * 1000:.1f} ms"
