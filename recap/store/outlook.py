"""What a session's next summary waits for, read from its rows: the policy's view
of its active messages (ids, roles, token counts, pins and tool links, never
their content) judged under its own settings, and the job its markers show.
``recap.session`` (the chat app's view) and ``recap sessions``/``recap stats``
(recap.ops.outlook) read it the same way.

Helpers take the database session as ``db=`` and never commit; every query runs on
PostgreSQL and SQLite.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement

from recap.core.planning.outlook import outlook
from recap.db import Db
from recap.errors import InvalidInput
from recap.models import ChatSession
from recap.settings import Settings, effective
from recap.store.enqueue import stale_before
from recap.store.plans import message_infos


def job_columns(settings: Settings, now: datetime) -> tuple[ColumnElement[bool], ...]:
    """(leased, pending, blocked) of a chat_sessions row at ``now``, compared in SQL
    (SQLite hands back naive datetimes), for :func:`job_of`."""
    return ((ChatSession.lease_token.isnot(None)
             & (ChatSession.lease_expires_at > now)).label("leased"),
            (ChatSession.enqueued_at > stale_before(now, settings)).label("pending"),
            (ChatSession.blocked_until > now).label("blocked"))


def job_of(row: Any) -> str | None:
    """The job a row of :func:`job_columns` shows: ``running`` (a live lease),
    ``queued`` (a live pending marker), ``dead-lettered`` (cooling down), or None."""
    return ("running" if row.leased else "queued" if row.pending
            else "dead-lettered" if row.blocked else None)


@dataclass(frozen=True)
class Judged:
    """A session judged under its own settings: its context budget and what its
    next summary waits for (:func:`judge`)."""

    budget: int
    state: str  # a recap.core.planning.outlook.State, or "invalid-overrides"
    why: str
    trigger: str
    forced_messages: int
    forced_tokens: int


def judge(session_id: str, *, overrides: dict[str, Any] | None, summary_tokens: int,
          settings: Settings, db: Db) -> Judged:
    """Why the session is not summarized yet and what will trigger it, under its
    overrides (``invalid-overrides``, and the deployment's budget, when they do
    not validate: its job dead-letters)."""
    try:
        tuned = effective(settings, overrides)
    except InvalidInput as exc:
        return Judged(settings.context_budget_tokens, "invalid-overrides",
                      f"{exc} (a job dead-letters the session)",
                      "fixing chat_sessions.overrides (recap configure), then recap retry",
                      0, 0)
    o = outlook(message_infos(session_id, db=db), summary_tokens=summary_tokens,
                t=tuned.thresholds())
    return Judged(tuned.context_budget_tokens, o.state, o.why, o.trigger, o.forced_messages,
                  o.forced_tokens)
