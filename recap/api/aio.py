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
:mod:`recap.api.hook`, :mod:`recap.api.window`) decides and builds the statements,
this module only awaits them. Only the waiting differs:

- ``add_message`` and ``after_reply`` reach the database through SQLAlchemy's
  asyncio engine on psycopg's async driver, the reply core's statements awaited
  on the loop. PostgreSQL only: with SQLite, DATABASE_URL raises ConfigError here
  (call the sync API through ``asyncio.to_thread`` instead);
- validation, block decoding and token counting of a new message (CPU work that
  grows with the content; the tokenizer loads on first use) run in the loop's
  default executor, so no call holds the loop for long whatever the message's size;
- ``build_context`` is the sync one in that executor, on the process's sync
  engine (:mod:`recap.db`, its own pool): a window can hold megabytes, and
  psycopg decodes rows where it fetches them, so the read, the decoding and the
  assembly all happen off the loop;
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
import time
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncSession,
)

from recap.api import context, warm
from recap.api.core import (
    NewMessage,
    other_user,
    owner_query,
    validate_message,
)
from recap.api.hook import HookPlan, counters_params, counters_statement, plan_counters
from recap.api.ingest import hook_failed
from recap.api.loops import STATES, engine, in_publisher, require_postgresql
from recap.api.window import check_system_prompt
from recap.core.context.assemble import Context
from recap.core.context.request import as_request
from recap.core.validate import check_session_id
from recap.db import rowcount, utcnow
from recap.llm.tokens import message_tokens
from recap.settings import get_settings
from recap.store.enqueue import (
    BREAKER,
    JobToSend,
    ReplyJobs,
    send_after_commit,
    send_both,
    send_jobs,
)

__all__ = ["Context", "add_message", "after_reply", "as_request", "build_context", "close",
           "transaction", "warm_up"]



async def add_message(session_id: str, role: str, content: str | list[dict[str, Any]], *,
                      pinned: bool = False, user_id: str | None = None,
                      db: AsyncSession | None = None) -> int:
    """Store one message and return its id; creates the session if needed.

    ``content``: a string or a Messages API content array; ``user_id`` as in the
    sync :func:`recap.api.ingest.add_message` (set once; another user's id raises
    InvalidInput naming both). With ``db``, writes inside the caller's transaction
    (the caller commits); otherwise committed by itself. Raises InvalidInput,
    writing nothing.
    """
    max_inline = get_settings().max_inline_base64_chars
    # Validation, block decoding, token counting and the bound values (the blocks'
    # JSON) grow with the content: all of it in one thread, never on the loop.
    new, params = await asyncio.to_thread(_prepare, session_id, role, content, pinned,
                                          user_id, max_inline)
    if db is not None:
        return await _insert(db, new, params)
    async with (await engine(autocommit=True)).connect() as conn:
        return await _insert(conn, new, params)


def _prepare(session_id: str, role: str, content: object, pinned: bool,
             user_id: str | None, max_inline: int) -> tuple[NewMessage, dict[str, object]]:
    msg = validate_message(session_id, role, content, pinned=pinned, user_id=user_id,
                           max_inline_chars=max_inline)
    new = NewMessage(session_id, role, msg, message_tokens(msg), pinned, user_id)
    return new, new.params(utcnow())


async def _insert(db: AsyncSession | AsyncConnection, new: NewMessage,
                  params: dict[str, object]) -> int:
    added = (await db.execute(new.statement(), params)).scalar()
    if added is None:  # the upsert's WHERE refused: another user's session
        owner = (await db.execute(owner_query(new.session_id))).scalar()
        raise other_user(new.session_id, owner, new.user_id or "")
    return int(added)


async def _plan(db: AsyncSession | AsyncConnection, session_id: str) -> HookPlan:
    # The sync recap.api.ingest.decide's read: one statement on the database's clock.
    settings = get_settings()
    row = (await db.execute(counters_statement(server_clock=True),
                            counters_params(session_id, settings=settings, now=None))
           ).one_or_none()
    return plan_counters(session_id, row, settings=settings, bound=None)


async def _mark(db: AsyncSession | AsyncConnection, hook: HookPlan) -> ReplyJobs:
    # The marker updates of the sync decide: a job for each that changed a row.
    title = hook.title is not None and rowcount(await db.execute(hook.title)) == 1
    queue = hook.summarize is not None and rowcount(await db.execute(hook.summarize)) == 1
    return ReplyJobs(queue, title, missing=hook.missing)


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
            jobs = await _mark(db, await _plan(db, session_id))
    except Exception as exc:
        return hook_failed(session_id, exc)
    return send_after_commit(db.sync_session, session_id, jobs,
                             dispatch=_publish_in_background)


async def _commit_then_publish(session_id: str) -> bool:
    """Decide (one read, no transaction), commit the pending markers, then publish.
    Once the markers are written, a cancelled caller (a client gone, a request
    timeout) still publishes: the marker may have committed, and a marker without
    its job would keep the hook from queueing the session until the marker goes
    stale."""
    async with (await engine(autocommit=True)).connect() as conn:
        hook = await _plan(conn, session_id)
    if hook.title is None and hook.summarize is None:
        return False  # the common case: nothing to queue, one round trip
    decided: ReplyJobs | None = None
    try:
        async with (await engine()).begin() as conn:
            decided = await _mark(conn, hook)
    except asyncio.CancelledError:
        if decided is not None:  # cancelled in the commit: it may have happened
            in_publisher(send_both, session_id, decided)
        raise
    assert decided is not None
    # shield: cancelling this await must not cancel the publish (a publish queued
    # behind others would otherwise never start).
    return (await asyncio.shield(in_publisher(send_both, session_id, decided))).summarize


async def build_context(session_id: str, *, system_prompt: str,
                        prompt_caching: bool | None = None) -> Context:
    """The system prompt and messages for the session's next Claude call, from one
    snapshot. Pass ``**as_request(ctx)`` to the SDK. ``prompt_caching`` as in the
    sync :func:`recap.api.context.build_context`. Raises InvalidInput for a bad
    id or a non-str ``system_prompt``, SessionNotFound for an unknown session.
    """
    check_system_prompt(system_prompt)
    check_session_id(session_id)
    require_postgresql(get_settings().database_url)
    # The whole read and assembly in one thread, on the sync engine: the window's
    # rows can be megabytes, and psycopg decodes rows where it fetches them (on
    # the loop, with the asyncio driver).
    return await asyncio.to_thread(context.build_context, session_id,
                                   system_prompt=system_prompt, prompt_caching=prompt_caching)


@contextlib.asynccontextmanager
async def transaction() -> AsyncIterator[AsyncSession]:
    """An ``AsyncSession`` on this loop's engine in one transaction: commits on
    success, rolls back on error. Pass it as ``db=`` to write several messages all
    or nothing (the adapters in recap.integrations store a turn this way)."""
    async with AsyncSession(await engine(), expire_on_commit=False) as db, db.begin():
        yield db


async def warm_up() -> None:
    """:func:`recap.warm_up` for the asyncio API: the sync warm-up in a thread (the
    settings, the tokenizer, ``build_context``'s engine, Celery and the broker),
    then this loop's asyncio engine (the schema checked, ``add_message``'s
    statement rehearsed and rolled back, the hook's read) and a publish thread.
    Call it in your app's start-up (FastAPI's lifespan) on the loop that serves
    replies. Raises as the sync one does; with SQLite, ConfigError (the asyncio
    API needs PostgreSQL)."""
    require_postgresql(get_settings().database_url)
    await asyncio.to_thread(warm.warm_up)
    settings = get_settings()
    new = await asyncio.to_thread(warm.probe_message, settings.max_inline_base64_chars)
    async with (await engine()).connect() as conn, conn.begin() as rehearsal:
        await _insert(conn, new, new.params(utcnow()))
        await rehearsal.rollback()
    async with (await engine(autocommit=True)).connect() as conn:
        await _plan(conn, warm.UNSTORED_SESSION)  # no such session: nothing marked
    await in_publisher(time.monotonic)  # the publish pool's thread, started


async def close() -> None:
    """Wait for this loop's background publishes, then dispose its engines. Call it
    at shutdown; later calls on this loop build a new engine."""
    state = STATES.pop(asyncio.get_running_loop(), None)
    if state is None:
        return
    await asyncio.gather(*state.publishing, return_exceptions=True)
    for built in state.engines.values():
        await built.dispose()


def _publish_in_background(jobs: list[JobToSend]) -> None:
    # Runs inside ``await db.commit()`` (SQLAlchemy's after-commit event), so on the
    # loop: schedule, do not wait. close() waits for what is still running.
    in_publisher(send_jobs, jobs)

