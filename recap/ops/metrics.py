"""The database side of ``recap metrics``: one snapshot of Recap's state per scrape.

Everything comes from the database, so the figures are right whatever number of
workers run, and a restart of the exporter loses nothing. A snapshot costs:

- run totals by status and reason class from summary_runs, which only grows (one
  row per job, kept for audit): a :class:`RunLedger` folds settled rows into
  running totals once, so each scrape reads only the runs of the last
  2 x SETTLE_S seconds (30 minutes), by primary key (the first scrape reads them
  all, once);
- one aggregate pass over chat_sessions (the counters of ``recap stats`` plus the
  due, over-budget and lag figures of the sessions on the global thresholds);
- for sessions with their own overrides (rare), the sweeper's own paged query
  plus one paged read of their counters (index ix_chat_sessions_overridden),
  judged with their settings in Python;
- one primary-key read of the sweeper's heartbeat, one aggregate of title_runs.

chat_messages is never read: the session counters hold what the figures need.
Helpers take ``db=`` and never commit; every query runs on PostgreSQL and SQLite.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session

from recap.core.spend import Spend
from recap.errors import InvalidInput
from recap.models import ChatSession, Heartbeat, SummaryRun
from recap.ops import stats
from recap.ops.reasons import reason_class
from recap.settings import Settings, effective
from recap.store import spend
from recap.store.enqueue import stale_before
from recap.worker.jobs.sweeper import SWEEP_HEARTBEAT, due_ids, due_query

log = logging.getLogger("recap.metrics")

# Labels of the token counters: summary_runs sums a job's summary and memory calls;
# title_runs records each title call.
SUMMARIZE_TASK = "summarize_session"
TITLE_TASK = "generate_title"


@dataclass(frozen=True)
class RunTotal:
    """All runs of one status and reason class, ever recorded."""

    status: str
    reason: str
    runs: int
    messages_condensed: int
    input_tokens: int
    output_tokens: int


@dataclass
class Snapshot:
    """What one scrape reports. Times are timezone-aware UTC; None: no such session."""

    now: datetime
    runs: list[RunTotal] = field(default_factory=list)
    sessions: int = 0
    active_messages: int = 0
    active_tokens: int = 0
    summary_tokens: int = 0
    due: int = 0
    pending: int = 0
    leased: int = 0
    dead: int = 0
    over_budget: int = 0
    escalated: int = 0
    oldest_due_at: datetime | None = None
    oldest_pending_at: datetime | None = None
    last_sweep_at: datetime | None = None
    title_tokens: tuple[int, int] = (0, 0)  # (input, output) of every title call
    # The sessions' spend sums (recap.core.spend) and those where Recap costs more.
    spend: Spend = field(default_factory=Spend)
    sessions_at_loss: int = 0

    @property
    def messages_condensed(self) -> int:
        return sum(r.messages_condensed for r in self.runs if r.status == "applied")

    @property
    def input_tokens(self) -> int:
        return sum(r.input_tokens for r in self.runs)

    @property
    def output_tokens(self) -> int:
        return sum(r.output_tokens for r in self.runs)

    def age_s(self, at: datetime | None) -> float:
        """Seconds from ``at`` to now (0 for None, never negative)."""
        return 0.0 if at is None else max(0.0, (self.now - _aware(at)).total_seconds())


def _aware(at: datetime) -> datetime:
    # SQLite hands back naive datetimes; Recap writes UTC everywhere.
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def run_totals(*, db: Session, where: ColumnElement[bool] | None = None) -> list[RunTotal]:
    """Totals per (status, reason class) over the runs matching ``where`` (default all)."""
    return [RunTotal(status, reason, int(n), int(condensed), int(tokens_in), int(tokens_out))
            for status, reason, n, condensed, tokens_in, tokens_out
            in stats.run_totals(db=db, by=reason_class(), where=where)]


def _add(into: dict[tuple[str, str], RunTotal], totals: list[RunTotal]) -> None:
    for r in totals:
        had = into.get((r.status, r.reason))
        into[(r.status, r.reason)] = r if had is None else RunTotal(
            r.status, r.reason, had.runs + r.runs,
            had.messages_condensed + r.messages_condensed,
            had.input_tokens + r.input_tokens, had.output_tokens + r.output_tokens)


# A run recorded more than this long ago is settled: every transaction that records
# a run has committed by then (they take milliseconds: Claude is called outside them).
SETTLE_S = 900


class RunLedger:
    """Totals over summary_runs kept incrementally, so a scrape's cost is bounded by
    the runs of the last 2 x SETTLE_S seconds, not by the whole history.

    Rows with ``id <= watermark`` are folded into ``settled`` once; each read adds
    the rows above it. The watermark only moves to a run recorded more than
    2 x SETTLE_S ago: ids are handed out before commit, so a smaller id may become
    visible after a larger one, but not later than SETTLE_S after the larger one's
    transaction began. Rows deleted after they were settled still count (summary_runs
    is append-only; after a manual prune, restart the exporter). Thread-safe.
    """

    def __init__(self, settle_s: float = SETTLE_S) -> None:
        self.settle_s = settle_s
        self.watermark = 0
        self.settled: dict[tuple[str, str], RunTotal] = {}
        self._lock = threading.Lock()

    def read(self, *, db: Session, now: datetime) -> list[RunTotal]:
        with self._lock:
            settled_before = now - timedelta(seconds=2 * self.settle_s)
            # Walks the primary key down from the newest run: reads only recent rows.
            mark = db.scalar(select(SummaryRun.id)
                             .where(SummaryRun.id > self.watermark,
                                    SummaryRun.created_at < settled_before)
                             .order_by(SummaryRun.id.desc()).limit(1))
            if mark is not None:
                _add(self.settled, run_totals(db=db, where=SummaryRun.id.between(
                    self.watermark + 1, mark)))
                self.watermark = int(mark)
            out, watermark = dict(self.settled), self.watermark
        _add(out, run_totals(db=db, where=SummaryRun.id > watermark))
        return [out[key] for key in sorted(out)]


def _global(condition: ColumnElement[bool]) -> ColumnElement[bool]:
    return ChatSession.overrides.is_(None) & condition


def over_budget(budget: int) -> ColumnElement[bool]:
    return ChatSession.summary_tokens + ChatSession.active_tokens > budget


def session_figures(snap: Snapshot, *, db: Session, settings: Settings) -> None:
    """Fill the session figures of ``snap`` in one pass over chat_sessions. Due and
    over-budget are decided here for the sessions on the global thresholds only
    (see :func:`override_figures`)."""
    now = snap.now
    sweepable = due_query(settings, now=now, limit=None).whereclause
    assert sweepable is not None
    due = _global(sweepable)
    pending = ChatSession.enqueued_at > stale_before(now, settings)
    columns: dict[str, ColumnElement[Any]] = {
        **stats.session_columns(settings, now),
        "due": stats.count_where(due),
        "over_budget": stats.count_where(_global(over_budget(settings.context_budget_tokens))),
        "oldest_due_at": func.min(case((due, ChatSession.updated_at))),
        "oldest_pending_at": func.min(case((pending, ChatSession.enqueued_at))),
    }
    row = db.execute(select(*(c.label(name) for name, c in columns.items()))).one()._mapping
    snap.sessions = int(row["sessions"])
    snap.active_messages = int(row["active_messages"])
    snap.active_tokens = int(row["active_tokens"])
    snap.summary_tokens = int(row["summary_tokens"])
    snap.pending = int(row["sessions_pending"])
    snap.leased = int(row["sessions_leased"])
    snap.dead = int(row["sessions_blocked"])
    snap.escalated = int(row["sessions_needing_escalation"])
    snap.due = int(row["due"])
    snap.over_budget = int(row["over_budget"])
    snap.oldest_due_at = _parse_time(row["oldest_due_at"])
    snap.oldest_pending_at = _parse_time(row["oldest_pending_at"])
    snap.spend = spend.total_of(row, prices=settings.prices_of())
    snap.sessions_at_loss = int(row["sessions_at_loss"]) + stats.overridden_at_loss(
        db=db, settings=settings)


def _parse_time(value: Any) -> datetime | None:
    # MIN over a CASE loses the column type on SQLite: the value comes back as text.
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def _pages(query: Any, *, db: Session, size: int) -> Iterator[list[Any]]:
    """``query``'s rows, ``size`` at a time, by chat session id (keyset paging)."""
    after: str | None = None
    while True:
        page = query.order_by(None).order_by(ChatSession.id)
        if after is not None:
            page = page.where(ChatSession.id > after)
        rows = list(db.execute(page.limit(size)))
        if not rows:
            return
        yield rows
        after = str(rows[-1].id)


def override_figures(snap: Snapshot, *, db: Session, settings: Settings) -> None:
    """Add the due and over-budget sessions among those with their own overrides,
    each judged with its own settings (as the sweeper does)."""
    free = due_query(settings, now=snap.now, limit=None) \
        .where(ChatSession.overrides.isnot(None)).add_columns(ChatSession.updated_at)
    for rows in _pages(free, db=db, size=settings.sweep_batch):
        due = set(due_ids(rows, settings))
        for row in rows:
            if row.id in due:
                snap.due += 1
                at = _aware(row.updated_at)
                if snap.oldest_due_at is None or at < _aware(snap.oldest_due_at):
                    snap.oldest_due_at = at
    budgets: dict[str, int] = {}
    tuned = select(ChatSession.id, ChatSession.summary_tokens, ChatSession.active_tokens,
                   ChatSession.overrides).where(ChatSession.overrides.isnot(None))
    for rows in _pages(tuned, db=db, size=settings.sweep_batch):
        for row in rows:
            key = json.dumps(row.overrides, sort_keys=True, default=str)
            if key not in budgets:
                budgets[key] = _budget(settings, row.overrides)
            if row.summary_tokens + row.active_tokens > budgets[key]:
                snap.over_budget += 1


def _budget(settings: Settings, overrides: Any) -> int:
    try:
        return effective(settings, overrides).context_budget_tokens
    except InvalidInput:  # its job records why (dead run); judge it by the global budget
        return settings.context_budget_tokens


def last_heartbeat(name: str, *, db: Session) -> datetime | None:
    """When the periodic job ``name`` last completed (recap.worker.jobs.sweeper)."""
    at = db.scalar(select(Heartbeat.at).where(Heartbeat.name == name))
    return None if at is None else _aware(at)


def snapshot(*, db: Session, settings: Settings, now: datetime,
             ledger: RunLedger | None = None) -> Snapshot:
    """Everything ``recap metrics`` exposes, read in the caller's transaction. Pass
    the same ``ledger`` to every call to read only recent runs (see RunLedger)."""
    snap = Snapshot(now=now)
    snap.runs = (ledger or RunLedger()).read(db=db, now=now)
    session_figures(snap, db=db, settings=settings)
    override_figures(snap, db=db, settings=settings)
    snap.last_sweep_at = last_heartbeat(SWEEP_HEARTBEAT, db=db)
    titles = stats.Stats()
    stats.title_counts(titles, db=db)
    snap.title_tokens = (titles.title_input_tokens, titles.title_output_tokens)
    return snap
