"""The audit of every job (summary_runs): one :class:`RunRecord` written per run, and
what a job reads back from earlier runs.

Each function takes the database session as ``db=`` (keyword-only) and never
commits: the job functions own the transactions.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Executable, bindparam, func, insert, select, update

from recap.core.planning import resends
from recap.core.retention import repairs
from recap.core.retention.guard import GuardCounts
from recap.db import Db
from recap.models import runs_table as RUNS
from recap.models import sessions_table as SESSIONS
from recap.store.rows import session_exists


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One summary_runs row. ``mode`` is the plan's (recap.core.planning.policy.Mode),
    ``guard`` the retention guard's counts, ``frozen_answers`` the answers refused
    as frozen or empty (recap.core.prompts.frozen), ``resends`` the times the batch
    was sent again (and ``resend_input_tokens`` their input), ``fallback`` a fold
    kept extractively; None (or 0, False) leaves a column NULL."""

    session_id: str
    status: str
    reason: str
    task_id: str | None = None
    attempt: int = 1
    mode: str | None = None
    messages_condensed: int = 0
    condensed_tokens: int | None = None
    first_message_id: int | None = None
    last_message_id: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    estimated_input_tokens: int | None = None
    summary_tokens: int | None = None
    latency_ms: int | None = None
    model: str | None = None
    error: str | None = None
    rewound_after: int | None = None
    guard: GuardCounts | None = None
    frozen_answers: int | None = None
    resends: int | None = None
    resend_input_tokens: int | None = None
    fallback: bool = False

    def columns(self) -> dict[str, Any]:
        """The row's columns, NULL ones left out (their defaults stand)."""
        row: dict[str, Any] = {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self)
            if f.name not in ("guard", "mode", "frozen_answers", "session_id", "resends",
                              "resend_input_tokens", "fallback")}
        row.update(session_id=self.session_id[:255],
                   mode=None if self.mode is None else str(self.mode),
                   frozen_answers=self.frozen_answers or None,
                   resends=self.resends or None,
                   resend_input_tokens=self.resend_input_tokens or None,
                   fallback=self.fallback or None,
                   **(_counts(self.guard) if self.guard else {}))
        return {k: v for k, v in row.items() if v is not None}


def record_run(record: RunRecord, *, db: Db, row_locked: bool = False) -> int:
    """Insert ``record``; returns its id. Its API tokens are added to the session's
    spend sums (recap.core.spend) in the same transaction.

    Only ``skipped`` runs are recorded for a session that is not stored (an unknown
    id); any other outcome is of a job that held the session, and if the session
    is gone it was forgotten (recap.forget) meanwhile: nothing is recorded and 0
    is returned, so the audit cannot bring back its id or its text.
    ``row_locked``: the caller's transaction has already updated the session row
    (the fenced write), so it is stored and locked until the commit, and the
    check is skipped.
    """
    row = record.columns()
    keys = tuple(sorted(row))
    if (record.status != "skipped" and not row_locked
            and not session_exists(record.session_id, db=db)):
        return 0
    run_id = int(db.execute(_run_insert(keys), {f"v_{k}": row[k] for k in keys}).scalar_one())
    if record.input_tokens or record.output_tokens:
        # The summarizer's spend (recap.core.spend), in the run's own transaction.
        db.execute(_spend_update(), {"sid": record.session_id,
                                     "tokens_in": record.input_tokens or 0,
                                     "tokens_out": record.output_tokens or 0})
    return run_id


@functools.cache
def _spend_update() -> Executable:
    # updated_at stays: it says when the session's messages or summary last changed.
    return (update(SESSIONS).where(SESSIONS.c.id == bindparam("sid"))
            .values(spend_summarize_input=SESSIONS.c.spend_summarize_input
                    + bindparam("tokens_in", type_=BigInteger),
                    spend_summarize_output=SESSIONS.c.spend_summarize_output
                    + bindparam("tokens_out", type_=BigInteger),
                    updated_at=SESSIONS.c.updated_at))


def _counts(guard: GuardCounts) -> dict[str, object]:
    # dataclasses.asdict deep-copies every value; the counts are ints and bools.
    return {f.name: getattr(guard, f.name) for f in dataclasses.fields(guard)}


@functools.cache
def _run_insert(keys: tuple[str, ...]) -> Executable:
    # Built once per set of columns, with bound parameters: building an INSERT and
    # its cache key costs a job more CPU than sending it.
    return (insert(RUNS).values({k: bindparam(f"v_{k}", type_=RUNS.c[k].type) for k in keys})
            .returning(RUNS.c.id))


def last_run(session_id: str, *, db: Db, status: str | None = None) -> Any:
    """The session's latest run (of ``status``, when given): its ``status``, ``error``,
    ``last_message_id`` and ``messages_held_back``; None when it has none."""
    query = (select(RUNS.c.status, RUNS.c.error, RUNS.c.last_message_id,
                    RUNS.c.messages_held_back)
             .where(RUNS.c.session_id == session_id))
    if status is not None:
        query = query.where(RUNS.c.status == status)
    return db.execute(query.order_by(RUNS.c.id.desc()).limit(1)).one_or_none()


# The most of a model's latest applied runs a claim looks through for its tenant's:
# a tenant with fewer folds among them is read as having no streak (the default:
# full resends, repairs as configured), and the claim's read stays bounded however
# much other tenants fold.
TENANT_SCAN = 2000


def _tenant_rows(model: str, tenant: str | None, *columns: Any, db: Db, limit: int,
                 where: Sequence[Any] = ()) -> Sequence[Any]:
    """``columns`` of ``model``'s latest applied runs (matching ``where``) of sessions
    under ``tenant`` (recap.core.tenant.tenant_of; None: ids without one), newest
    first, at most ``limit``, among the model's latest TENANT_SCAN."""
    latest = (select(RUNS.c.id, RUNS.c.session_id, *columns)
              .where(RUNS.c.model == model, RUNS.c.status == "applied", *where)
              .order_by(RUNS.c.id.desc()).limit(TENANT_SCAN).subquery())
    # substr, not LIKE: SQLite's LIKE ignores case, and "Acme" is not "acme".
    prefix = None if tenant is None else tenant + "/"
    mine = (func.substr(latest.c.session_id, 1, len(prefix)) == prefix
            if prefix is not None else latest.c.session_id.not_like("%/%"))
    return db.execute(select(*(latest.c[c.name] for c in columns)).where(mine)
                      .order_by(latest.c.id.desc()).limit(limit)).all()


def recent_repairs(model: str, *, tenant: str | None,
                   db: Db) -> tuple[repairs.RepairOutcome, ...]:
    """The repair outcomes of ``model``'s latest applied runs that had something
    missing before repair, of ``tenant``'s sessions (any of them), newest first:
    another tenant's folds never decide whether this tenant's are repaired."""
    rows = _tenant_rows(model, tenant, RUNS.c.repaired, RUNS.c.specifics_missing_before_repair,
                        RUNS.c.specifics_missing_after, db=db, limit=repairs.REPAIR_WINDOW,
                        where=(RUNS.c.specifics_missing_before_repair > 0,))
    return tuple(repairs.RepairOutcome(bool(r.repaired),
                                       bool(r.repaired) and r.specifics_missing_after
                                       < r.specifics_missing_before_repair) for r in rows)


def recent_folds(model: str, *, tenant: str | None,
                 db: Db) -> tuple[resends.FoldOutcome, ...]:
    """Whether each of ``model``'s latest applied folds of ``tenant``'s sessions (any
    of them) was kept extractively, and its resends, newest first
    (recap.core.planning.resends): another tenant's folds never withhold this
    tenant's resends."""
    rows = _tenant_rows(model, tenant, RUNS.c.fallback, RUNS.c.resends, db=db,
                        limit=resends.WINDOW)
    return tuple(resends.FoldOutcome(bool(r.fallback), r.resends or 0) for r in rows)


def held_before(session_id: str, batch: Sequence[int], *, db: Db) -> frozenset[int]:
    """The messages of ``batch`` (ids, oldest first) that the last applied run held
    back: it condensed a prefix ending at its last id and left the next ones, which
    are still the oldest candidates, so they lead this batch."""
    last = last_run(session_id, db=db, status="applied")
    if last is None or not last.messages_held_back or last.last_message_id is None:
        return frozenset()
    after = [m for m in batch if m > last.last_message_id]
    return frozenset(after[:last.messages_held_back])
