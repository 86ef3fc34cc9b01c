"""The asyncio API's per-loop state (:mod:`recap.api.aio`): one engine per event loop
and DATABASE_URL, and the small thread pool that publishes jobs off the loop."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from recap.engines import refuse_closed_by_server
from recap.errors import ConfigError
from recap.migrate import ensure_schema_once
from recap.settings import get_settings

T = TypeVar("T")

# Threads for broker publishes: enough for a burst of replies, few enough that a
# stuck broker (before the first failure opens the breaker) holds little.
PUBLISH_THREADS = 4


@dataclass
class LoopState:
    engines: dict[str, AsyncEngine] = field(default_factory=dict)
    autocommit: dict[str, AsyncEngine] = field(default_factory=dict)  # views of engines
    publishing: set[asyncio.Future[Any]] = field(default_factory=set)


# An asyncio engine's connections belong to the loop that opened them.
STATES: dict[asyncio.AbstractEventLoop, LoopState] = {}


def loop_state() -> LoopState:
    loop = asyncio.get_running_loop()
    state = STATES.get(loop)
    if state is None:
        for old in [old for old in STATES if old.is_closed()]:
            STATES.pop(old, None)  # a loop that ended without close()
        state = STATES[loop] = LoopState()
    return state


async def engine(*, autocommit: bool = False) -> AsyncEngine:
    """This loop's engine, once the database is reachable and migrated (else
    DatabaseNotReady). With ``autocommit``, its view whose statements each commit
    by themselves (no BEGIN and COMMIT round trips), sharing its pool."""
    settings = get_settings()
    state = loop_state()
    engine = state.engines.get(settings.database_url)
    if engine is None:  # ConfigError here for a database the asyncio API cannot use
        engine = state.engines[settings.database_url] = make_async_engine(
            settings.database_url, pool_size=settings.db_pool_size,
            max_overflow=settings.db_max_overflow)
        state.autocommit[settings.database_url] = engine.execution_options(
            isolation_level="AUTOCOMMIT")
    await ensure_schema_once(settings.database_url)
    return state.autocommit[settings.database_url] if autocommit else engine


def make_async_engine(url: str, **kwargs: Any) -> AsyncEngine:
    """An asyncio engine on psycopg's async driver for a PostgreSQL ``url`` (any
    driver name: ``postgresql://``, ``postgresql+psycopg://``...); ConfigError for
    any other database."""
    parsed = require_postgresql(url)
    # The same privacy as recap.db.make_engine: errors never carry chat text; and
    # the same dead-connection check on checkout, without pre-ping's round trip.
    engine = create_async_engine(parsed.set(drivername="postgresql+psycopg"),
                                 hide_parameters=True, **kwargs)
    refuse_closed_by_server(engine.sync_engine)
    return engine


def require_postgresql(url: str) -> URL:
    """``url`` parsed; ConfigError unless it names PostgreSQL (the asyncio API's one
    database)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        raise ConfigError(
            f"the asyncio API (recap.api.aio) needs PostgreSQL, and DATABASE_URL is "
            f"{parsed.get_backend_name()} ({parsed.render_as_string(hide_password=True)}); "
            f"with SQLite, call the sync API through asyncio.to_thread")
    return parsed


# -- publishing off the loop --------------------------------------------------------

_PUBLISHER: tuple[int, ThreadPoolExecutor] | None = None


def publisher() -> ThreadPoolExecutor:
    global _PUBLISHER
    if _PUBLISHER is None or _PUBLISHER[0] != os.getpid():  # threads do not survive fork
        _PUBLISHER = (os.getpid(), ThreadPoolExecutor(PUBLISH_THREADS,
                                                      thread_name_prefix="recap-publish"))
    return _PUBLISHER[1]


def in_publisher(fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
    """Start ``fn(*args)`` on the publish pool now, like asyncio.to_thread (context
    variables, e.g. the trace, go along); close() waits for it. Cancelling the
    returned future cancels a publish still queued: await it through shield."""
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    future = asyncio.wrap_future(publisher().submit(call))
    publishing = loop_state().publishing
    publishing.add(future)
    future.add_done_callback(publishing.discard)
    return future
