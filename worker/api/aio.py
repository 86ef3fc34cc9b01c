"""The chat app's API as awaitables, for asyncio apps (FastAPI, Starlette, LangGraph)::

    from recap.api import aio

    await aio.add_message(session_id, "user", text)
    ctx = await aio.build_context(session_id, system_prompt=SYSTEM)
    reply = await client.messages.create(model=..., max_tokens=..., **aio.as_request(ctx))
    await aio.add_message(session_id, "assistant", reply_text)
    await aio.after_reply(session_id)             # maybe queue one job; never raises
    ...
    await aio.close()                             # at shutdown (e.g. FastAPI's lifespan)

The same contract as the sync API (:mod:`recap.api.ingest`,
:mod:`recap.api.context`), built from the same pieces: the same validation and
errors (InvalidInput, SessionNotFound), statements, coalescing (pending
markers), title jobs and circuit breaker: the reply core (:mod:`recap.api.core`,
:mod:`recap.api.window`) decides and builds the statements, this module only awaits them. Only the
waiting differs:

- the database is reached through SQLAlchemy's asyncio engine on psycopg's async
  driver, the reply core's statements awaited on the loop. PostgreSQL only: with
  SQLite, DATABASE_URL raises ConfigError here (call the sync API through
  ``asyncio.to_thread`` instead);
- token counting and context assembly (CPU work; the tokenizer loads on first
  use) run in the loop's default executor;
- broker publishes run in a small thread pool of their own, so a stuck broker
  ties up neither the loop nor the executor that counts tokens. The outage bound
  is the sync hook's: one failed publish pauses publishing for a few seconds.

One engine per event loop and DATABASE_URL, built on first use; ``await
aio.close()`` waits for pending publishes and disposes the current loop's
engine (a later call builds a new one).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import os
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any, TypeVar

from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    create_async_engine,
)

from recap.api.core import (
    JobToSend,
    NewMessage,
    ReplyJobs,
    add_statement,
    counters_query,
    other_user,
    owner_query,
    plan_hook,
    validate_message,
)
from recap.api.ingest import hook_failed, send_after_commit, send_both, send_jobs
from recap.api.window import (
    assemble_window,
    check_system_prompt,
    memories_queries,
    snapshot_query,
    window_of,
    with_memories,
)
from recap.core.assemble import Context
from recap.core.request import as_request
from recap.core.validate import check_session_id
from recap.db import DB_NOW, rowcount, utcnow
from recap.errors import ConfigError
from recap.llm.tokens import count_tokens, message_tokens
from recap.migrate import ensure_schema_once
from recap.settings import get_settings
from recap.store.enqueue import BREAKER, stale_before

__all__ = ["Context", "add_message", "after_reply", "as_request", "build_context", "close",
           "transaction"]

T = TypeVar("T")

# Threads for broker publishes: enough for a burst of replies, few enough that a
# stuck broker (before the first failure opens the breaker) holds little.
PUBLISH_THREADS = 4


async def add_message(session_id: str, role: str, content: str | list[dict[str, Any]], *,
                      pinned: bool = False, user_id: str | None = None,
                      db: AsyncSession | None = None) -> int:
    """Store one message and return its id; creates the session if needed.

    ``content``: a string or a Messages API content array; ``user_id`` as in the
    sync :func:`recap.api.ingest.add_message` (set once; another user's id raises
    InvalidInput naming both). With ``db``, writes inside the caller's transaction
    (the caller commits); otherwise in a transaction of its own. Raises
    InvalidInput, writing nothing.
    """
    msg = validate_message(session_id, role, content, pinned=pinned, user_id=user_id,
                           max_inline_chars=get_settings().max_inline_base64_chars)
    new = NewMessage(session_id, role, msg, await asyncio.to_thread(message_tokens, msg),
                     pinned, user_id)
    if db is not None:
        return await _insert(db, new)
    async with (await _engine()).begin() as conn:
        return await _insert(conn, new)


async def _insert(db: AsyncSession | AsyncConnection, new: NewMessage) -> int:
    added = (await db.execute(add_statement(), new.params(utcnow()))).scalar()
    if added is None:  # the upsert's WHERE refused: another user's session
        owner = (await db.execute(owner_query(new.session_id))).scalar()
        raise other_user(new.session_id, owner, new.user_id or "")
    return int(added)


async def _decide(db: AsyncSession | AsyncConnection, session_id: str) -> ReplyJobs:
    # The sync recap.api.ingest.decide, awaited.
    settings = get_settings()
    # The lease and the marker on the database's clock (PostgreSQL only here).
    now = (await db.execute(DB_NOW)).scalar_one().astimezone(UTC)
    stale = stale_before(now, settings)
    row = (await db.execute(counters_query(session_id, now=now, stale=stale))).one_or_none()
    hook = plan_hook(session_id, row, settings=settings, now=now, stale=stale)
    title = hook.title is not None and rowcount(await db.execute(hook.title)) == 1
    queue = hook.summarize is not None and rowcount(await db.execute(hook.summarize)) == 1
    return ReplyJobs(queue, title, missing=row is None)


async def after_reply(session_id: str, *, db: AsyncSession | None = None) -> bool:
    """The hook: maybe queue one summarize job (and, after the first exchange, one
    title job). Returns True if a summarize job was (or will be) sent.

    Raises InvalidInput for a bad id; never raises anything else (see the sync
    :func:`recap.api.ingest.after_reply`). With ``db``, the decision runs in a
    savepoint of the caller's transaction and the jobs are published after its
    outermost commit (never if it rolls back), in the background: ``await
    db.commit()`` does not wait for the broker. ``await close()`` waits for them.
    """
    check_session_id(session_id)
    if BREAKER.is_open():
        return False
    try:
        if db is None:
            return await _commit_then_publish(session_id)
        async with db.begin_nested():  # a failure leaves the caller's transaction usable
            jobs = await _decide(db, session_id)
    except Exception as exc:
        return hook_failed(session_id, exc)
    return send_after_commit(db.sync_session, session_id, jobs,
                             dispatch=_publish_in_background)


async def _commit_then_publish(session_id: str) -> bool:
    """Decide and commit (the pending marker), then publish. Once the decision is
    made, a cancelled caller (a client gone, a request timeout) still publishes:
    the marker may have committed, and a marker without its job would keep the
    hook from queueing the session until the marker goes stale."""
    decided: ReplyJobs | None = None
    try:
        async with (await _engine()).begin() as conn:
            decided = await _decide(conn, session_id)
    except asyncio.CancelledError:
        if decided is not None:  # cancelled in the commit: it may have happened
            _in_publisher(send_both, session_id, decided)
        raise
    assert decided is not None
    # shield: cancelling this await must not cancel the publish (a publish queued
    # behind others would otherwise never start).
    return (await asyncio.shield(_in_publisher(send_both, session_id, decided))).summarize


async def build_context(session_id: str, *, system_prompt: str,
                        prompt_caching: bool | None = None) -> Context:
    """The system prompt and messages for the session's next Claude call, from one
    snapshot. Pass ``**as_request(ctx)`` to the SDK. ``prompt_caching`` as in the
    sync :func:`recap.api.context.build_context`. Raises InvalidInput for a bad
    id or a non-str ``system_prompt``, SessionNotFound for an unknown session.
    """
    check_system_prompt(system_prompt)
    check_session_id(session_id)
    settings = get_settings()
    async with (await _engine()).connect() as conn:
        window = window_of(session_id, (await conn.execute(snapshot_query(session_id))).all(),
                           default_budget=settings.context_budget_tokens)
        # Later statements, as in the sync read_window (see there).
        for read in memories_queries(window, dialect="postgresql", settings=settings):
            window = with_memories(window, read, (await conn.execute(read.query)).all(),
                                   dialect="postgresql")
    return await asyncio.to_thread(assemble_window, system_prompt, window, settings=settings,
                                   count=count_tokens, prompt_caching=prompt_caching)


@contextlib.asynccontextmanager
async def transaction() -> AsyncIterator[AsyncSession]:
    """An ``AsyncSession`` on this loop's engine in one transaction: commits on
    success, rolls back on error. Pass it as ``db=`` to write several messages all
    or nothing (the adapters in recap.integrations store a turn this way)."""
    async with AsyncSession(await _engine(), expire_on_commit=False) as db, db.begin():
        yield db


async def close() -> None:
    """Wait for this loop's background publishes, then dispose its engines. Call it
    at shutdown; later calls on this loop build a new engine."""
    state = _STATES.pop(asyncio.get_running_loop(), None)
    if state is None:
        return
    await asyncio.gather(*state.publishing, return_exceptions=True)
    for engine in state.engines.values():
        await engine.dispose()


# -- per-loop state -----------------------------------------------------------------

@dataclass
class _LoopState:
    engines: dict[str, AsyncEngine] = field(default_factory=dict)
    publishing: set[asyncio.Future[Any]] = field(default_factory=set)


# An asyncio engine's connections belong to the loop that opened them.
_STATES: dict[asyncio.AbstractEventLoop, _LoopState] = {}


def _state() -> _LoopState:
    loop = asyncio.get_running_loop()
    state = _STATES.get(loop)
    if state is None:
        for old in [old for old in _STATES if old.is_closed()]:
            _STATES.pop(old, None)  # a loop that ended without close()
        state = _STATES[loop] = _LoopState()
    return state


async def _engine() -> AsyncEngine:
    """This loop's engine, once the database is reachable and migrated (else
    DatabaseNotReady)."""
    settings = get_settings()
    engines = _state().engines
    engine = engines.get(settings.database_url)
    if engine is None:  # ConfigError here for a database the asyncio API cannot use
        engine = engines[settings.database_url] = make_async_engine(settings.database_url,
            pool_size=settings.db_pool_size, max_overflow=settings.db_max_overflow)
    await ensure_schema_once(settings.database_url)
    return engine


def make_async_engine(url: str, **kwargs: Any) -> AsyncEngine:
    """An asyncio engine on psycopg's async driver for a PostgreSQL ``url`` (any
    driver name: ``postgresql://``, ``postgresql+psycopg://``...); ConfigError for
    any other database."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        raise ConfigError(
            f"the asyncio API (recap.api.aio) needs PostgreSQL, and DATABASE_URL is "
            f"{parsed.get_backend_name()} ({parsed.render_as_string(hide_password=True)}); "
            f"with SQLite, call the sync API through asyncio.to_thread")
    # The same privacy as recap.db.make_engine: errors never carry chat text.
    return create_async_engine(parsed.set(drivername="postgresql+psycopg"),
                               pool_pre_ping=True, hide_parameters=True, **kwargs)


# -- publishing off the loop --------------------------------------------------------

_PUBLISHER: tuple[int, ThreadPoolExecutor] | None = None


def _publisher() -> ThreadPoolExecutor:
    global _PUBLISHER
    if _PUBLISHER is None or _PUBLISHER[0] != os.getpid():  # threads do not survive fork
        _PUBLISHER = (os.getpid(), ThreadPoolExecutor(PUBLISH_THREADS,
                                                      thread_name_prefix="recap-publish"))
    return _PUBLISHER[1]


def _in_publisher(fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
    """Start ``fn(*args)`` on the publish pool now, like asyncio.to_thread (context
    variables, e.g. the trace, go along); close() waits for it. Cancelling the
    returned future cancels a publish still queued: await it through shield."""
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    future = asyncio.wrap_future(_publisher().submit(call))
    publishing = _state().publishing
    publishing.add(future)
    future.add_done_callback(publishing.discard)
    return future


def _publish_in_background(jobs: list[JobToSend]) -> None:
    # Runs inside ``await db.commit()`` (SQLAlchemy's after-commit event), so on the
    # loop: schedule, do not wait. close() waits for what is still running.
    _in_publisher(send_jobs, jobs)
