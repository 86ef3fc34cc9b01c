"""What only the asyncio API (recap.api.aio) promises: the caller's AsyncSession,
one engine per loop, and an event loop that a call never blocks."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from recap.api import aio, context, loops
from recap.db import transaction
from recap.errors import ConfigError
from recap.models import ChatMessage
from recap.store import enqueue
from recap.store.enqueue import BREAKER, SUMMARIZE_TASK
from tests.api.test_import_cost import forbidden, loaded_after
from tests.env import TEST_ENV
from tests.helpers import LOW, message_ids, seed, session_row

# -- the caller's AsyncSession --------------------------------------------------------

def _async_session() -> tuple[AsyncSession, Any]:
    """A session on an engine of the test's own, as an app would have."""
    engine = loops.make_async_engine(TEST_ENV["DATABASE_URL"])
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
    assert not [loop for loop in loops.STATES if loop.is_closed()]


@pytest.mark.unit
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
    url = loops.make_async_engine("postgresql://u:secret@db.example/chat").url
    assert url.drivername == "postgresql+psycopg" and url.database == "chat"


@pytest.mark.unit
def test_the_async_api_loads_no_sdk_summarizer_jobs_or_celery_worker() -> None:
    modules = loaded_after("from recap.api import aio")
    assert "recap.api.aio" in modules and "sqlalchemy.ext.asyncio" in modules
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


def test_the_window_is_read_and_assembled_off_the_loop(
        settings_env: Callable[..., None], monkeypatch: pytest.MonkeyPatch) -> None:
    # A window can hold megabytes: its rows are fetched, decoded and assembled in a
    # thread, so none of it runs on the loop's thread whatever the window's size.
    settings_env(**LOW)
    seed("off-loop", 3)
    threads: list[int] = []

    def on_thread(fn: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(*args: Any, **kwargs: Any) -> Any:
            threads.append(threading.get_ident())
            return fn(*args, **kwargs)
        return recorded

    monkeypatch.setattr(context, "window_of", on_thread(context.window_of))
    monkeypatch.setattr(context, "assemble_window", on_thread(context.assemble_window))

    async def scenario() -> tuple[int, aio.Context]:
        ctx = await aio.build_context("off-loop", system_prompt="You help.")
        await aio.close()
        return threading.get_ident(), ctx

    loop_thread, ctx = asyncio.run(scenario())
    assert len(ctx["messages"]) == 3
    assert len(threads) == 2 and loop_thread not in threads
