"""Why a session is not summarized yet and what will trigger it (``recap context``,
``recap stats``, ``recap sessions``).

The answer is :func:`recap.store.outlook.judge` (recap.core.planning.outlook.outlook on
the session's active messages under its own settings, overrides applied), plus
what the session's markers say: a job queued, a job running, or a dead-letter
cool-down. Helpers
take the database session as ``db=`` and never commit; every query runs on
PostgreSQL and SQLite.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from recap.core.planning import policy
from recap.errors import SessionNotFound
from recap.models import ChatSession
from recap.settings import Settings
from recap.store.outlook import job_columns, job_of, judge


@dataclass(frozen=True)
class SessionOutlook:
    session_id: str
    title: str | None
    messages: int  # active (not yet condensed)
    active_tokens: int
    summary_tokens: int
    summary_version: int
    budget: int  # the session's context budget
    state: str  # a recap.core.planning.outlook.State, or "invalid-overrides"
    why: str  # why no summary now (for "due": the rule that fires)
    trigger: str  # what will trigger the next summary ("" when due)
    forced_messages: int  # what `recap summarize ID --force` condenses now (0: nothing)
    forced_tokens: int
    job: str | None  # "queued", "running" or "dead-lettered" (cooling down); None: no job

    @property
    def usage(self) -> float:
        return policy.usage(self.summary_tokens, self.active_tokens, self.budget)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "context_usage": round(self.usage, 4)}


def _query(settings: Settings, now: datetime) -> Select[Any]:
    return select(ChatSession.id, ChatSession.title, ChatSession.message_count,
                  ChatSession.active_tokens, ChatSession.summary_tokens,
                  ChatSession.summary_version, ChatSession.overrides,
                  *job_columns(settings, now))


def _outlook(row: Any, *, db: Session, settings: Settings) -> SessionOutlook:
    j = judge(row.id, overrides=row.overrides, summary_tokens=int(row.summary_tokens),
              settings=settings, db=db)
    return SessionOutlook(row.id, row.title, int(row.message_count), int(row.active_tokens),
                          int(row.summary_tokens), int(row.summary_version), j.budget,
                          j.state, j.why, j.trigger, j.forced_messages, j.forced_tokens,
                          job_of(row))


def session_outlook(session_id: str, *, db: Session, settings: Settings,
                    now: datetime) -> SessionOutlook:
    """The outlook of one session; SessionNotFound if there is no such session."""
    row = db.execute(_query(settings, now).where(ChatSession.id == session_id)).one_or_none()
    if row is None:
        raise SessionNotFound(f"no chat session with id {session_id!r}")
    return _outlook(row, db=db, settings=settings)


def largest(*, db: Session, settings: Settings, now: datetime,
            limit: int) -> list[SessionOutlook]:
    """The outlooks of the ``limit`` sessions with the most active tokens (the ones
    nearest a summary, or the most surprising to see without one), largest first.
    Reads at most ``limit`` sessions' message rows (ix_chat_sessions_active_tokens)."""
    rows = db.execute(_query(settings, now).where(ChatSession.message_count > 0)
                      .order_by(ChatSession.active_tokens.desc(), ChatSession.id)
                      .limit(limit)).all()
    return [_outlook(row, db=db, settings=settings) for row in rows]
