"""``recap.session(id)``: a whole session as the chat app sees it, the answer of
``GET /v1/sessions/{id}`` too (the route returns this model, so the two cannot
drift): the summary and its version, the last fold, the counts, the memories by
who stated them, the title and the session's own settings. One transaction, on
the reply path's rules: no job pipeline, no SDK.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from recap.core.validate import check_session_id
from recap.db import transaction, utcnow
from recap.errors import InvalidInput, SessionNotFound
from recap.models import ArchivedMessage, ChatSession, SummaryRun
from recap.sessions.overrides import KIND_ORDER, listed_memories
from recap.settings import Settings, effective, get_settings
from recap.store.outlook import job_columns, job_of, judge
from recap.store.spend import spend_of

__all__ = ["Fold", "SessionView", "SpendView", "session"]


class Fold(BaseModel):
    """The session's latest summarize job past its checks (a skipped one, which
    changed nothing, is not a fold; nor is a rewind)."""

    model_config = ConfigDict(frozen=True)

    at: datetime = Field(description="when it ended (UTC)")
    outcome: str = Field(description="applied, superseded, failed or dead (summary_runs.status)")
    messages: int = Field(description="messages it condensed (0 unless applied)")
    mode: str | None = Field(description="the rule that made its plan: normal, capacity, "
                                         "aggressive or forced")
    reason: str | None = Field(description="why, as summary_runs records it")


class SpendView(BaseModel):
    """What the session's replies cost next to full history with prompt caching
    (recap.core.spend; docs/operations/savings.md): an estimate that assumes each call was
    made when its reply was stored. Cost figures are the reply model's base-input
    tokens, priced by the price table (docs/operations/prices.md): the replies'
    requests at the reply model's cache read, write and input prices, the
    summarizing at the summarizer's input and output prices; ``price_basis`` says
    which."""

    model_config = ConfigDict(frozen=True)

    since: datetime = Field(description="when counting began (UTC)")
    replies: int = Field(description="replies (assistant messages) accounted")
    recap_cache_read_tokens: int = Field(description="Recap's requests: cached prefix read")
    recap_cache_write_tokens: int = Field(description="Recap's requests: written to the cache")
    recap_uncached_tokens: int = Field(description="Recap's requests: too short to cache")
    summarize_input_tokens: int = Field(description="the summarizer's API input tokens")
    summarize_output_tokens: int = Field(description="the summarizer's API output tokens")
    full_cache_read_tokens: int = Field(description="full history: cached prefix read")
    full_cache_write_tokens: int = Field(description="full history: written to the cache")
    full_uncached_tokens: int = Field(description="full history: too short to cache")
    recap_cost_tokens: int = Field(description="Recap's requests and summarizing, priced")
    full_cost_tokens: int = Field(description="full history with caching, priced")
    saved_tokens: int = Field(description="full_cost_tokens - recap_cost_tokens; negative: "
                                          "a loss")
    saved_usd: float = Field(description="saved_tokens in USD (the reply model's input "
                                         "price)")
    saved_share: float | None = Field(description="saved_tokens / full_cost_tokens "
                                                  "(null: no cost yet)")
    verdict: str = Field(description="saving, loss or even (the sign of saved_tokens)")
    price_basis: str = Field(description="the unit and the prices the costs are in")


class SessionView(BaseModel):
    """A chat session: what its next Claude call is built from, and why."""

    model_config = ConfigDict(frozen=True)

    session_id: str
    user_id: str | None
    title: str | None
    summary: str | None = Field(description="the rolling summary (with its details section)")
    summary_version: int = Field(description="applied folds so far (0: no summary yet)")
    summary_tokens: int
    last_fold: Fold | None
    message_count: int = Field(description="active messages (in the window, not yet "
                                           "condensed)")
    summarized_message_count: int = Field(description="messages condensed into the summary")
    archived_message_count: int = Field(description="condensed messages kept in the archive "
                                                    "(RECAP_ARCHIVE_SUMMARIZED)")
    active_tokens: int = Field(description="tokens of the active messages")
    budget: int = Field(description="the session's context budget")
    state: str = Field(description="what the next summary waits for (recap sessions)")
    job: str | None = Field(description="queued, running or dead-lettered; null: none")
    memories: dict[str, list[str]] = Field(
        description="the live facts its context can show, each once, by who stated it "
                    "(user, tool, document, assistant, unverified, guard, legacy), most "
                    "important first")
    overrides: dict[str, Any] | None = Field(description="the session's own settings "
                                                         "(recap.configure_session)")
    spend: SpendView = Field(description="what its replies cost next to full history "
                                         "with caching")

    def __str__(self) -> str:
        """A few lines a person reads (``print(session(id))``); every field is in
        ``.model_dump()``."""
        return "\n".join(summary_lines(self))

    def __repr__(self) -> str:
        return f"<SessionView {self}>"


# Characters of the summary a printed SessionView shows.
PREVIEW_CHARS = 72


def summary_lines(v: SessionView) -> list[str]:
    """The short, multi-line description of a session that ``str(view)`` is."""
    head = f"session {v.session_id!r}"
    head += f" {v.title!r}" if v.title else " (untitled)"
    head += f", user {v.user_id!r}" if v.user_id else ""
    summary = "summary: none yet" if v.summary is None else (
        f"summary: version {v.summary_version}, {v.summary_tokens} tokens: "
        f"{_preview(v.summary)}")
    fold = "last fold: none" if v.last_fold is None else (
        f"last fold: {v.last_fold.outcome}, {v.last_fold.messages} messages, "
        f"{v.last_fold.at.isoformat(timespec='seconds')}")
    memories = ", ".join(f"{kind} {len(facts)}" for kind, facts in v.memories.items() if facts)
    saved = ("" if v.spend.saved_share is None
             else f" ({v.spend.saved_share:.0%})")
    return [head,
            f"  window: {v.message_count} messages, {v.active_tokens} tokens of a "
            f"{v.budget} budget; {v.summarized_message_count} condensed, "
            f"{v.archived_message_count} archived",
            f"  {summary}", f"  {fold}",
            f"  state: {v.state}; job: {v.job or 'none'}",
            f"  memories: {memories or 'none'}",
            f"  overrides: {v.overrides or 'none'}",
            f"  spend: {v.spend.verdict}, {v.spend.saved_tokens} tokens saved{saved} over "
            f"{v.spend.replies} replies"]


def _preview(text: str) -> str:
    line = " ".join(text.split())
    return repr(line if len(line) <= PREVIEW_CHARS else line[:PREVIEW_CHARS - 3] + "...")


def session(session_id: str) -> SessionView:
    """The session ``session_id`` as :class:`SessionView`, read in one transaction.
    Raises InvalidInput for a bad id, SessionNotFound for an unknown one (or one
    outside the current tenant)."""
    check_session_id(session_id)
    settings = get_settings()
    now = utcnow()
    with transaction() as s:
        row = s.execute(select(ChatSession, *job_columns(settings, now))
                        .where(ChatSession.id == session_id)).one_or_none()
        if row is None:
            raise SessionNotFound(f"no chat session with id {session_id!r}")
        head: ChatSession = row[0]
        judged = judge(session_id, overrides=head.overrides,
                       summary_tokens=head.summary_tokens, settings=settings, db=s)
        return SessionView(
            session_id=session_id, user_id=head.user_id, title=head.title,
            summary=head.rolling_summary, summary_version=head.summary_version,
            summary_tokens=head.summary_tokens, last_fold=_last_fold(session_id, db=s),
            message_count=head.message_count,
            summarized_message_count=head.summarized_message_count,
            archived_message_count=_archived(session_id, db=s),
            active_tokens=head.active_tokens, budget=judged.budget, state=judged.state,
            job=job_of(row), memories=_by_kind(listed_memories(session_id, db=s)),
            overrides=head.overrides, spend=_spend(head, settings=settings))


def _spend(head: ChatSession, *, settings: Settings) -> SpendView:
    since = head.spend_since or head.created_at
    try:  # the session's own reply model, if it names one
        prices = effective(settings, head.overrides).prices_of()
    except InvalidInput:
        prices = settings.prices_of()
    # SQLite hands back naive datetimes; every stored time is UTC.
    return SpendView(since=since if since.tzinfo else since.replace(tzinfo=UTC),
                     **spend_of(head, prices=prices).as_dict())


def _last_fold(session_id: str, *, db: Session) -> Fold | None:
    found = db.execute(select(SummaryRun.created_at, SummaryRun.status,
                              SummaryRun.messages_condensed, SummaryRun.mode,
                              SummaryRun.reason)
                       .where(SummaryRun.session_id == session_id,
                              SummaryRun.status != "skipped",
                              SummaryRun.rewound_after.is_(None))
                       .order_by(SummaryRun.id.desc()).limit(1)).one_or_none()
    if found is None:
        return None
    at, outcome, messages, mode, reason = found
    # SQLite hands back naive datetimes; every stored time is UTC.
    return Fold(at=at if at.tzinfo else at.replace(tzinfo=UTC), outcome=outcome,
                messages=int(messages or 0), mode=mode, reason=reason)


def _archived(session_id: str, *, db: Session) -> int:
    return int(db.scalar(select(func.count()).select_from(ArchivedMessage)
                         .where(ArchivedMessage.session_id == session_id)) or 0)


def _by_kind(listed: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The listing's facts by kind, kinds in :data:`KIND_ORDER` (only those present)."""
    out: dict[str, list[str]] = {}
    for kind in KIND_ORDER:
        facts = [m["fact"] for m in listed if m["kind"] == kind]
        if facts:
            out[kind] = facts
    return out
