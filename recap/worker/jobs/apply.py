"""Step 5 of a summarize job: the fenced apply, in one transaction.

:func:`apply_summary` owns it: the summary write (:func:`write_summary`), the run
record, the memories, the archive copy and the delete of exactly the claimed
batch, all or nothing. :func:`write_summary` is the fenced write every new
summary goes through (a resummarize too): one UPDATE that matches no row unless
the caller's lease token and summary version still hold; it writes the summary,
moves the counters by what was condensed, releases the lease and records what
the plan on the remaining messages says (pending follow-up, escalation,
normal_blocked). Nothing is decided here but what only the transaction can see
(messages that arrived during the call).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from sqlalchemy import Boolean, Update, bindparam, case, delete, func, null, update

from recap.core.planning import policy
from recap.db import Db, core_transaction, db_now, on_server_clock
from recap.errors import Superseded
from recap.models import messages_table as MESSAGES
from recap.models import sessions_table as SESSIONS
from recap.settings import Settings
from recap.store.fence import holds
from recap.store.plans import message_infos, plan_flags
from recap.store.rows import archive_messages, save_memories, save_summary_version
from recap.store.runs import RunRecord, record_run
from recap.worker.jobs.claim import Claim
from recap.worker.jobs.outcome import Job, Outcome
from recap.worker.jobs.retain import Fold

# Built once, with bound parameters: building a statement and its cache key on
# every job cost more CPU than running it.
_BATCH_DELETE = (delete(MESSAGES)
                 .where(MESSAGES.c.session_id == bindparam("sid"),
                        MESSAGES.c.id.in_(bindparam("ids", expanding=True)))
                 .returning(MESSAGES.c.id))


def apply_summary(claim: Claim, fold: Fold, *, job: Job, latency_ms: int) -> Outcome:
    """In one transaction: write ``fold``'s summary, store its memories, delete (or
    archive) exactly its batch, record the run.

    Raises Superseded (and changes nothing) when the claim no longer holds.
    """
    plan, after = fold.plan, fold.after
    ids = plan.batch_ids
    session_id, settings = claim.session_id, claim.settings
    run = applied_run(claim, fold, job=job, latency_ms=latency_ms)
    with core_transaction() as s:
        # The follow-up's marker on the clock the sweeper reads (the database's).
        row = write_summary(session_id, db=s, token=claim.token, version=claim.version,
                            summary=fold.summary, summary_tokens=fold.summary_tokens,
                            condensed=ids, condensed_tokens=plan.batch_tokens, after=after,
                            settings=settings)
        if row is None:
            raise Superseded("the lease or summary version changed during the call")
        run_id = record_run(run, db=s, row_locked=True)
        save_summary_version(session_id, db=s, version=row.summary_version,
                             text=fold.summary, tokens=fold.summary_tokens,
                             covers_through=ids[-1], run_id=run_id,
                             keep=settings.summary_versions_keep)
        if fold.facts:
            save_memories(session_id, fold.facts, db=s, first_id=ids[0], last_id=ids[-1],
                          run_id=run_id)
        if settings.archive_summarized:
            archive_messages(session_id, ids, db=s, run_id=run_id)
        deleted = s.execute(_BATCH_DELETE, {"sid": session_id, "ids": ids}).all()
        if len(deleted) != len(ids):
            raise Superseded(f"{len(ids) - len(deleted)} of the {len(ids)} batch messages "
                             "were already gone")
        version, message_count, now = row
        if message_count != fold.left:  # messages arrived during the call: plan on them too
            after = policy.plan(message_infos(session_id, db=s),
                                summary_tokens=fold.summary_tokens, t=settings.thresholds())
            s.execute(update(SESSIONS).where(SESSIONS.c.id == session_id)
                      .values(enqueued_at=now if after.should_summarize else None,
                              **plan_flags(after, settings)._asdict()))
        return Outcome(
            session_id, "applied", plan.reason, mode=plan.mode,
            messages_condensed=len(ids), summary_tokens=fold.summary_tokens,
            summary_version=version, more_work=after.should_summarize, model=fold.model,
            input_tokens=fold.input_tokens, output_tokens=fold.output_tokens,
            latency_ms=latency_ms,
            memories=len(fold.facts) if settings.extract_memories or fold.facts else None)


def applied_run(claim: Claim, fold: Fold, *, job: Job, latency_ms: int) -> RunRecord:
    """The summary_runs row of ``fold`` applied onto ``claim``."""
    plan = fold.plan
    ids = plan.batch_ids
    return RunRecord(session_id=claim.session_id, task_id=job.task_id, attempt=job.attempt,
                     status="applied", reason=plan.reason, mode=plan.mode,
                     messages_condensed=len(ids), condensed_tokens=plan.batch_tokens,
                     first_message_id=ids[0], last_message_id=ids[-1],
                     input_tokens=fold.input_tokens, output_tokens=fold.output_tokens,
                     estimated_input_tokens=fold.estimated_input_tokens,
                     summary_tokens=fold.summary_tokens, latency_ms=latency_ms,
                     model=fold.model, guard=fold.guard, frozen_answers=fold.frozen,
                     resends=fold.resends, resend_input_tokens=fold.resend_input_tokens,
                     fallback=fold.fallback)


class Written(NamedTuple):
    """The session's counters right after the write, and the clock it was written on."""

    summary_version: int
    message_count: int
    now: datetime


def write_summary(session_id: str, *, db: Db, token: str, version: int, summary: str,
                  summary_tokens: int, condensed: Sequence[int], condensed_tokens: int,
                  after: policy.Plan, settings: Settings,
                  now: datetime | None = None) -> Written | None:
    """Write ``summary`` under the fence; None (nothing written) when the lease
    ``token`` or the summary ``version`` no longer hold. ``condensed`` are the ids
    the caller deletes or archives in the same transaction (none for a rebuild);
    ``after`` is the plan on what stays. ``now``: the clock to write with; None
    reads the database's (:func:`recap.db.db_now`), on PostgreSQL inside the
    UPDATE itself (no round trip of its own)."""
    server_clock = on_server_clock(db, now)
    clock = None if server_clock else now or db_now(db)
    flags = plan_flags(after, settings)
    row = db.execute(_fenced_update(server_clock), {
        "p_sid": session_id, "p_token": token, "p_version": version,
        "p_summary": summary, "p_summary_tokens": summary_tokens,
        "p_n": len(condensed), "p_tokens": condensed_tokens, "p_now": clock,
        "p_enqueue": after.should_summarize,
        "p_needs_escalation": flags.needs_escalation,
        "p_normal_blocked": flags.normal_blocked,
        "p_normal_blocked_under": flags.normal_blocked_under}).one_or_none()
    if row is None:
        return None
    return Written(row.summary_version, row.message_count, clock or row.now.astimezone(UTC))


@functools.cache
def _fenced_update(server_clock: bool) -> Update:
    """Built once per clock with bound parameters (``p_*``): building it and its
    cache key on every job cost more CPU than sending it. ``server_clock``:
    PostgreSQL's now() (the transaction's start, what db_now reads) in place of
    ``p_now``, and returned."""
    p = bindparam
    clock = func.now() if server_clock else p("p_now", type_=SESSIONS.c.summary_updated_at.type)
    returning: list[Any] = [SESSIONS.c.summary_version, SESSIONS.c.message_count]
    if server_clock:
        returning.append(clock.label("now"))
    return (update(SESSIONS)
            .where(holds(p("p_sid"), p("p_token"), p("p_version")))
            .values(rolling_summary=p("p_summary"), summary_tokens=p("p_summary_tokens"),
                    summary_version=SESSIONS.c.summary_version + 1,
                    summarized_message_count=SESSIONS.c.summarized_message_count + p("p_n"),
                    message_count=SESSIONS.c.message_count - p("p_n"),
                    active_tokens=SESSIONS.c.active_tokens - p("p_tokens"),
                    summary_updated_at=clock, lease_token=None, lease_expires_at=None,
                    lost_leases=0, blocked_until=None,
                    # The pending marker of the follow-up the plan on what stays needs.
                    enqueued_at=case((p("p_enqueue", type_=Boolean), clock), else_=null()),
                    needs_escalation=p("p_needs_escalation"),
                    normal_blocked=p("p_normal_blocked"),
                    normal_blocked_under=p("p_normal_blocked_under"))
            .returning(*returning))
