"""Operator statistics: session counts, run totals, latency percentiles and title counts.

Query helpers take the database session as ``db=`` and never commit; every query runs
unchanged on PostgreSQL and SQLite.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session

from recap.core.spend import Spend
from recap.core.tenant import current_tenant
from recap.errors import InvalidInput
from recap.models import ChatSession, SummaryRun, TitleRun
from recap.settings import Settings, effective
from recap.store import spend
from recap.store.enqueue import stale_before


@dataclass
class Stats:
    """One snapshot of Recap's state; token counts are tiktoken estimates unless 'api'."""

    sessions: int = 0
    active_messages: int = 0
    active_tokens: int = 0
    summary_tokens: int = 0
    summaries_applied: int = 0
    messages_condensed: int = 0
    # Tokens the summaries keep out of the sessions' contexts now (what was condensed
    # less the summaries): a size, not money; the spend's saved_tokens is the saving.
    context_tokens_removed: int = 0
    runs_by_status: dict[str, int] = field(default_factory=dict)
    failed_runs: int = 0
    dead_runs: int = 0
    latency_p50_ms: int | None = None
    latency_p95_ms: int | None = None
    api_input_tokens: int = 0
    api_output_tokens: int = 0
    sessions_needing_escalation: int = 0
    sessions_leased: int = 0
    sessions_pending: int = 0
    sessions_blocked: int = 0
    # Sessions the sweeper leaves alone after runs that found nothing to do.
    sessions_backing_off: int = 0
    # Title jobs (title_runs): sessions with a title, calls, failed calls, API usage.
    sessions_titled: int = 0
    title_runs: int = 0
    title_failures: int = 0
    title_input_tokens: int = 0
    title_output_tokens: int = 0
    # The retention guard over applied runs that ran it (summary_runs.specifics_*).
    guarded_runs: int = 0
    specifics_total: int = 0
    specifics_missing_after: int = 0
    specifics_in_details: int = 0
    specifics_to_memories: int = 0
    # The condensed messages' specifics by salience (recap.core.retention.salience): stated by
    # the user, referred to again, used right after a tool returned them, the rest
    # kept; and those left in the archive only (a tool returned them, nothing used them).
    specifics_stated: int = 0
    specifics_referred: int = 0
    specifics_used: int = 0
    specifics_rest: int = 0
    specifics_archived: int = 0
    messages_held_back: int = 0
    repair_calls: int = 0
    # Share of specifics the model's summaries kept (after any repair); Recap kept the
    # rest itself (details, held back, memories). None: no guarded run yet.
    retention_rate: float | None = None
    repair_rate: float | None = None  # guarded runs that needed a repair call
    # Repair calls that reduced what was missing, what all repair calls cost (API
    # tokens), and runs that skipped repair because it had stopped helping the model.
    repair_success_rate: float | None = None
    repair_input_tokens: int = 0
    repair_output_tokens: int = 0
    repairs_skipped: int = 0
    # Summary answers refused as frozen (the previous summary back, the new messages
    # ignored) or empty, and asked again another way, on any run.
    frozen_answers: int = 0
    # Times a job sent its batch again after an unusable answer (RECAP_MAX_RESENDS
    # bounds them per job) and the input tokens those calls spent, on any run; and
    # applied folds kept extractively because no way of asking the model worked.
    resends: int = 0
    resend_input_tokens: int = 0
    extractive_folds: int = 0
    # Why the sessions cooling down now were dead-lettered: their last dead run's
    # error (clipped), with how many sessions share it.
    blocked_reasons: dict[str, int] = field(default_factory=dict)
    # Per model: Recap's token estimate / the API's count of the same requests.
    token_estimate_ratio: dict[str, float] = field(default_factory=dict)
    # What the replies' requests and the summarizing cost next to full history with
    # caching, summed over the sessions (recap.core.spend.Spend.as_dict), and the
    # sessions where Recap costs more.
    spend: dict[str, Any] = field(default_factory=dict)
    sessions_at_loss: int = 0


def count_where(condition: ColumnElement[bool]) -> Any:
    # SUM(CASE ...) rather than FILTER (...): the same SQL on both databases.
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


def session_columns(settings: Settings, now: datetime) -> dict[str, ColumnElement[Any]]:
    """The per-session counters of :class:`Stats`, as aggregates over chat_sessions
    (``recap metrics`` adds its own to the same single pass)."""
    stale = stale_before(now, settings)
    return {
        "sessions": func.count(),
        "active_messages": func.coalesce(func.sum(ChatSession.message_count), 0),
        "active_tokens": func.coalesce(func.sum(ChatSession.active_tokens), 0),
        "summary_tokens": func.coalesce(func.sum(ChatSession.summary_tokens), 0),
        "sessions_needing_escalation": count_where(ChatSession.needs_escalation.is_(True)),
        "sessions_leased": count_where(ChatSession.lease_token.isnot(None)
                                        & (ChatSession.lease_expires_at > now)),
        "sessions_pending": count_where(ChatSession.enqueued_at > stale),
        "sessions_blocked": count_where(ChatSession.blocked_until > now),
        "sessions_backing_off": count_where(ChatSession.noop_backoff_until > now),
        **spend.total_columns(settings.prices_of()),
    }


def session_counts(stats: Stats, *, db: Session, settings: Settings,
                   now: datetime) -> None:
    """Fill the per-session counters of ``stats`` from chat_sessions."""
    columns = session_columns(settings, now)
    row = db.execute(select(*(c.label(name) for name, c in columns.items()))).one()
    for name in columns:
        if not name.startswith("spend_"):
            setattr(stats, name, int(row._mapping[name]))
    stats.spend = spend.total_of(row._mapping, prices=settings.prices_of()).as_dict()
    stats.sessions_at_loss += overridden_at_loss(db=db, settings=settings)


def run_totals(*, db: Session, by: ColumnElement[Any] | None = None,
               where: ColumnElement[bool] | None = None) -> list[Any]:
    """Rows of (status[, by], runs, messages condensed, API input tokens, API output
    tokens) over the summary_runs rows matching ``where`` (default all), grouped by
    status (and by the expression ``by``, which may refer to summary_runs' columns)."""
    rows = select(SummaryRun.status, SummaryRun.messages_condensed, SummaryRun.input_tokens,
                  SummaryRun.output_tokens, *([] if by is None else [by.label("by")]))
    inner = (rows if where is None else rows.where(where)).subquery()
    keys = [inner.c.status, *([] if by is None else [inner.c.by])]
    return list(db.execute(
        select(*keys, func.count(),
               func.coalesce(func.sum(inner.c.messages_condensed), 0),
               func.coalesce(func.sum(inner.c.input_tokens), 0),
               func.coalesce(func.sum(inner.c.output_tokens), 0))
        .group_by(*keys).order_by(*keys)).all())


def run_counts(stats: Stats, *, db: Session) -> None:
    """Fill the per-status run counters and API token sums from summary_runs."""
    for status, count, condensed, tokens_in, tokens_out in run_totals(db=db):
        stats.runs_by_status[status] = int(count)
        stats.api_input_tokens += int(tokens_in or 0)
        stats.api_output_tokens += int(tokens_out or 0)
        if status == "applied":
            stats.summaries_applied = int(count)
            stats.messages_condensed = int(condensed)
    stats.failed_runs = stats.runs_by_status.get("failed", 0)
    stats.dead_runs = stats.runs_by_status.get("dead", 0)


def context_tokens_removed(*, db: Session) -> int:
    """Tokens the summaries keep out of the sessions' contexts now: a size, not a
    cost (the spend's saved_tokens prices what that did to the bill).

    Removed = the tokens of every message condensed (and deleted) in a session
    that still exists (``summary_runs.condensed_tokens``), minus the summaries
    that replaced them.
    """
    condensed = db.scalar(
        select(func.coalesce(func.sum(SummaryRun.condensed_tokens), 0))
        .where(SummaryRun.status == "applied",
               SummaryRun.session_id.in_(select(ChatSession.id))))
    summaries = db.scalar(select(func.coalesce(func.sum(ChatSession.summary_tokens), 0)))
    return int(condensed or 0) - int(summaries or 0)


def nearest_rank(p: float, n: int) -> int:
    """0-based index of the ``p``-th percentile of ``n`` sorted values (nearest rank)."""
    if not 0 < p <= 100 or n < 1:
        raise ValueError(f"need 0 < p <= 100 and n >= 1, got p={p}, n={n}")
    return max(1, math.ceil(p / 100 * n)) - 1


def latency_percentiles(*, db: Session,
                        ps: Sequence[float] = (50, 95)) -> dict[float, int | None]:
    """Percentiles of applied runs' latency_ms, picked in SQL (no full fetch)."""
    applied = (SummaryRun.status == "applied", SummaryRun.latency_ms.isnot(None))
    n = int(db.scalar(select(func.count()).select_from(SummaryRun).where(*applied)) or 0)
    if n == 0:
        return {p: None for p in ps}
    return {p: db.scalar(select(SummaryRun.latency_ms).where(*applied)
                              .order_by(SummaryRun.latency_ms)
                              .offset(nearest_rank(p, n)).limit(1))
            for p in ps}


def title_counts(stats: Stats, *, db: Session) -> None:
    """Fill the title counters of ``stats`` from chat_sessions and title_runs."""
    stats.sessions_titled = int(db.scalar(select(func.count()).select_from(ChatSession)
                                          .where(ChatSession.title.isnot(None))) or 0)
    for status, count, tokens_in, tokens_out in db.execute(
            select(TitleRun.status, func.count(),
                   func.coalesce(func.sum(TitleRun.input_tokens), 0),
                   func.coalesce(func.sum(TitleRun.output_tokens), 0))
            .group_by(TitleRun.status)):
        stats.title_runs += int(count)
        stats.title_failures += int(count) if status == "failed" else 0
        stats.title_input_tokens += int(tokens_in or 0)
        stats.title_output_tokens += int(tokens_out or 0)


GUARD_SUMS = ("specifics_total", "specifics_missing_after", "specifics_in_details",
              "specifics_to_memories", "messages_held_back", "repair_input_tokens",
              "repair_output_tokens", "specifics_stated", "specifics_referred",
              "specifics_used", "specifics_rest", "specifics_archived")
# A blocked session's reason in `recap stats`: the start of its dead run's error.
REASON_CHARS = 160


def guard_counts(stats: Stats, *, db: Session) -> None:
    """Fill the retention guard's counters and rates from applied summary_runs."""
    helped = SummaryRun.repaired.is_(True) & (SummaryRun.specifics_missing_after
                                              < SummaryRun.specifics_missing_before_repair)
    row = db.execute(
        select(func.count(), count_where(SummaryRun.repaired.is_(True)), count_where(helped),
               count_where(SummaryRun.repair_skipped.is_(True)),
               *(func.coalesce(func.sum(getattr(SummaryRun, c)), 0) for c in GUARD_SUMS))
        .where(SummaryRun.status == "applied", SummaryRun.specifics_total.isnot(None))).one()
    stats.guarded_runs, stats.repair_calls = int(row[0]), int(row[1])
    stats.repairs_skipped = int(row[3])
    asked = db.execute(select(func.coalesce(func.sum(SummaryRun.frozen_answers), 0),
                              func.coalesce(func.sum(SummaryRun.resends), 0),
                              func.coalesce(func.sum(SummaryRun.resend_input_tokens), 0),
                              count_where(SummaryRun.fallback.is_(True)))).one()
    (stats.frozen_answers, stats.resends, stats.resend_input_tokens,
     stats.extractive_folds) = (int(v or 0) for v in asked)
    if stats.repair_calls:
        stats.repair_success_rate = round(int(row[2]) / stats.repair_calls, 4)
    for name, value in zip(GUARD_SUMS, row[4:], strict=True):
        setattr(stats, name, int(value))
    if stats.guarded_runs:
        stats.repair_rate = round(stats.repair_calls / stats.guarded_runs, 4)
        total = max(stats.specifics_total, stats.specifics_missing_after)
        stats.retention_rate = round(1 - stats.specifics_missing_after / total, 4) \
            if total else 1.0
# The latest runs per model that the estimate ratio is taken over: recent enough
# to follow a model or tokenizer change, enough to average out one odd batch.
ESTIMATE_RUNS = 200


def estimate_ratios(*, db: Session, runs: int = ESTIMATE_RUNS) -> dict[str, float]:
    """Per model: Recap's tiktoken estimate of its requests' input over the API's
    ``usage.input_tokens`` for them, summed over the model's latest ``runs`` runs
    that carry both. Below 1, Recap undercounts: its budgets hold more than they
    say."""
    ranked = (select(SummaryRun.model, SummaryRun.estimated_input_tokens.label("est"),
                     SummaryRun.input_tokens.label("api"),
                     func.row_number().over(partition_by=SummaryRun.model,
                                            order_by=SummaryRun.id.desc()).label("n"))
              .where(SummaryRun.model.isnot(None), SummaryRun.estimated_input_tokens > 0,
                     SummaryRun.input_tokens > 0).subquery())
    rows = db.execute(select(ranked.c.model, func.sum(ranked.c.est), func.sum(ranked.c.api))
                      .where(ranked.c.n <= runs).group_by(ranked.c.model)
                      .order_by(ranked.c.model))
    return {model: round(int(est) / int(api), 3) for model, est, api in rows}


def blocked_reasons(*, db: Session, now: datetime) -> dict[str, int]:
    """For the sessions cooling down after a dead letter: the error of each one's
    last dead run (clipped to REASON_CHARS), with how many sessions share it."""
    last = (select(SummaryRun.session_id, func.max(SummaryRun.id).label("id"))
            .where(SummaryRun.status == "dead")
            .where(SummaryRun.session_id.in_(select(ChatSession.id)
                                             .where(ChatSession.blocked_until > now)))
            .group_by(SummaryRun.session_id).subquery())
    out: dict[str, int] = {}
    for (error,) in db.execute(select(SummaryRun.error).join(last, SummaryRun.id == last.c.id)):
        reason = (error or "no error recorded")[:REASON_CHARS]
        out[reason] = out.get(reason, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def collect_stats(*, db: Session, settings: Settings, now: datetime) -> Stats:
    stats = Stats()
    session_counts(stats, db=db, settings=settings, now=now)
    run_counts(stats, db=db)
    title_counts(stats, db=db)
    guard_counts(stats, db=db)
    stats.context_tokens_removed = context_tokens_removed(db=db)
    stats.blocked_reasons = blocked_reasons(db=db, now=now)
    stats.token_estimate_ratio = estimate_ratios(db=db)
    pct = latency_percentiles(db=db)
    stats.latency_p50_ms, stats.latency_p95_ms = pct[50], pct[95]
    return stats


@dataclass(frozen=True)
class Loss:
    """A session where Recap costs more than full history with caching."""

    session_id: str
    spend: Spend


def losses(*, db: Session, settings: Settings, limit: int) -> list[Loss]:
    """The sessions at a loss in the current tenant (recap.core.tenant), largest
    loss first, at most ``limit``, each priced at its own prices (a session's
    reply_model override included). Sessions on the deployment's settings are
    picked in SQL; those with overrides (rare) are judged one by one."""
    name = current_tenant()
    where = None if name is None else ChatSession.id.startswith(name + "/", autoescape=True)
    prices = settings.prices_of()
    found = [Loss(row.id, spend.spend_of(row, prices=prices)) for row in db.execute(
        spend.at_loss_rows(prices=prices, where=where, limit=limit))]
    found += _overridden_losses(db=db, settings=settings, where=where)
    found.sort(key=lambda loss: (loss.spend.full_cost - loss.spend.recap_cost,
                                 loss.session_id))
    return found[:limit]


def _overridden_losses(*, db: Session, settings: Settings,
                       where: ColumnElement[bool] | None) -> list[Loss]:
    """The sessions with overrides at a loss, each at its own prices."""
    out = []
    for row in db.execute(spend.overridden_rows(where=where)):
        try:
            own = effective(settings, row.overrides).prices_of()
        except InvalidInput:  # its job dead-letters it, naming the problem
            own = settings.prices_of()
        spent = spend.spend_of(row, prices=own)
        if spent.saved_tokens < 0:
            out.append(Loss(row.id, spent))
    return out


def overridden_at_loss(*, db: Session, settings: Settings) -> int:
    """How many sessions with overrides are at a loss at their own prices (the SQL
    aggregate counts those on the deployment's settings)."""
    return len(_overridden_losses(db=db, settings=settings, where=None))
