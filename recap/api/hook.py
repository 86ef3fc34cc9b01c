"""The reply core's ``after_reply`` half (:mod:`recap.api.core` has
``add_message``'s): the counters read and what the hook queues, with no I/O.

:func:`counters_statement` with :func:`counters_params` -> :func:`plan_counters`
(:func:`plan_hook`: the marker updates to run) -> a job is sent for each update
that changed a row (recap.store.enqueue publishes it). The sync driver is
:mod:`recap.api.ingest`, the asyncio one :mod:`recap.api.aio`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    DateTime,
    Interval,
    Select,
    String,
    Update,
    bindparam,
    func,
    select,
)

from recap.core.planning import policy
from recap.core.prompts.titles import needs_title
from recap.errors import InvalidInput
from recap.models import ChatSession
from recap.settings import Settings, effective
from recap.store.enqueue import (
    pending_update,
    stale_before,
    title_due_update,
)

__all__ = ["HookPlan", "counters_params", "counters_statement", "plan_counters",
           "plan_hook"]


@functools.cache
def counters_statement(*, server_clock: bool) -> Select[Any]:
    """One primary-key read of what the hook decides on (:func:`plan_hook`), built
    once; its values come from :func:`counters_params`.

    With ``server_clock`` (PostgreSQL) the row is judged on the database's own clock
    (``now()``, the clock the jobs and the sweeper use) and carries it as ``now``:
    the hook with no job to queue is this one statement, one round trip. Otherwise
    (SQLite: one file, one host, one clock) the caller binds ``now`` and ``stale``.
    """
    if server_clock:
        now: Any = func.now()
        stale: Any = now - bindparam("stale_age", type_=Interval)
        clock: tuple[Any, ...] = (now.label("now"),)
    else:
        now = bindparam("now", type_=DateTime(timezone=True))
        stale = bindparam("stale", type_=DateTime(timezone=True))
        clock = ()
    return select(
        ChatSession.message_count, ChatSession.active_tokens, ChatSession.summary_tokens,
        (ChatSession.lease_token.isnot(None)
         & (ChatSession.lease_expires_at > now)).label("leased"),
        (ChatSession.blocked_until > now).label("blocked"), ChatSession.normal_blocked,
        ChatSession.normal_blocked_under, ChatSession.overrides, ChatSession.title,
        # Compared in SQL: SQLite hands back naive datetimes.
        (ChatSession.title_requested_at > stale).label("title_fresh"), *clock,
    ).where(ChatSession.id == bindparam("session_id", type_=String))


def counters_params(session_id: str, *, settings: Settings,
                    now: datetime | None) -> dict[str, object]:
    """The bound values of :func:`counters_statement`: ``now`` None for the server's
    clock, else the clock to judge on."""
    if now is None:
        return {"session_id": session_id,
                "stale_age": timedelta(seconds=settings.enqueue_stale_s)}
    return {"session_id": session_id, "now": now, "stale": stale_before(now, settings)}


@dataclass(frozen=True)
class HookPlan:
    """The marker updates the hook runs, title first (None: not that job). A job is
    sent only if its update changed a row: it set the pending marker."""

    title: Update | None = None
    summarize: Update | None = None
    missing: bool = False  # no such session


def plan_counters(session_id: str, row: Any, *, settings: Settings,
                  bound: datetime | None) -> HookPlan:
    """:func:`plan_hook` for what :func:`counters_statement` read: ``bound`` is the
    clock the read was given, None when it took the database's own ``now()``."""
    if row is None:
        return HookPlan(missing=True)
    now = row.now.astimezone(UTC) if bound is None else bound
    return plan_hook(session_id, row, settings=settings, now=now,
                     stale=stale_before(now, settings))


def plan_hook(session_id: str, row: Any, *, settings: Settings, now: datetime,
              stale: datetime) -> HookPlan:
    """What to queue for the ``row`` of :func:`counters_statement` (None: no session)."""
    if row is None:
        return HookPlan(missing=True)
    title = (title_due_update(session_id, now=now, stale_before=stale)
             if settings.titles_enabled and needs_title(
                 title=row.title, message_count=row.message_count,
                 title_requested_at_is_fresh=bool(row.title_fresh)) else None)
    if row.leased:
        return HookPlan(title)  # a running job re-checks when it applies
    if row.overrides:
        try:
            settings = effective(settings, row.overrides)
        except InvalidInput:
            pass  # the job records the bad overrides (and dead-letters the session)
    if row.blocked and policy.usage(row.summary_tokens, row.active_tokens,
                                    settings.context_budget_tokens) <= policy.AGGRESSIVE_USAGE:
        # A dead-lettered session waits for its cool-down or `recap retry`, unless
        # its context is about to go over budget: a failed fold must not leave it
        # there, so the aggressive path still gets its job.
        return HookPlan(title)
    if not policy.might_trigger(message_count=row.message_count,
                                active_tokens=row.active_tokens,
                                summary_tokens=row.summary_tokens, t=settings.thresholds(),
                                # The flag holds only under the thresholds it was set under.
                                normal_blocked=row.normal_blocked and
                                row.normal_blocked_under == settings.thresholds_key()):
        return HookPlan(title)
    return HookPlan(title, pending_update(session_id, now=now, settings=settings))
