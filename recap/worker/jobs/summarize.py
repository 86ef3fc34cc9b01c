"""One summarize job: claim -> summarize (+ mine memories) -> fenced apply.

Each public function here owns exactly one transaction. No transaction is open
while Claude is called. The apply is fenced by the lease token and the summary
version, and deletes (or archives) exactly the claimed ids or nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from datetime import timedelta

from sqlalchemy import bindparam, delete, select, update

from recap import tracing
from recap.core.planning import policy
from recap.core.prompts.bulk import excerpt_turns
from recap.core.prompts.summarize import clip_turns
from recap.db import core_transaction, db_now
from recap.errors import PermanentLLMError, Superseded, UnusableSummary
from recap.llm.client import Usage, classify
from recap.llm.tokens import count_tokens, split_by_tokens
from recap.models import messages_table as MESSAGES
from recap.models import runs_table as RUNS
from recap.models import sessions_table as SESSIONS
from recap.store.fence import release
from recap.store.rows import (
    archive_messages,
    record_run,
    save_memories,
    save_summary_version,
)
from recap.worker.jobs.claim import Claim, blocked_flags, claim_session, message_infos
from recap.worker.jobs.fold import Fold
from recap.worker.jobs.outcome import (
    Job,
    Outcome,
    Status,
    describe_error,
    is_transient,
    log_outcome,
)
from recap.worker.jobs.resources import Resources
from recap.worker.jobs.retain import retain
from recap.worker.jobs.write import write_summary

log = logging.getLogger("recap.worker.jobs")


# Built once, with bound parameters: building a statement and its cache key on
# every job cost more CPU than running it.
_BATCH_DELETE = (delete(MESSAGES)
                 .where(MESSAGES.c.session_id == bindparam("sid"),
                        MESSAGES.c.id.in_(bindparam("ids", expanding=True)))
                 .returning(MESSAGES.c.id))


def apply_summary(claim: Claim, fold: Fold, *, job: Job, latency_ms: int) -> Outcome:
    """In one transaction: write ``fold``'s summary, store its memories, delete (or
    archive) exactly its batch, record the run. Nothing is decided here but what
    only the transaction can see (messages that arrived during the call).

    Raises Superseded (and changes nothing) when the claim no longer holds.
    """
    plan, after = fold.plan, fold.after
    ids = plan.batch_ids
    with core_transaction() as s:
        # The follow-up's marker on the clock the sweeper reads (the database's).
        row = write_summary(claim.session_id, db=s, token=claim.token, version=claim.version,
                            summary=fold.summary, summary_tokens=fold.summary_tokens,
                            condensed=ids, condensed_tokens=plan.batch_tokens, after=after,
                            settings=claim.settings)
        if row is None:
            raise Superseded("the lease or summary version changed during the call")
        run_id = record_run(claim.session_id, db=s, task_id=job.task_id, attempt=job.attempt,
                            status="applied", reason=plan.reason, mode=plan.mode,
                            messages_condensed=len(ids), condensed_tokens=plan.batch_tokens,
                            first_message_id=ids[0], last_message_id=ids[-1],
                            input_tokens=fold.input_tokens, output_tokens=fold.output_tokens,
                            estimated_input_tokens=fold.estimated_input_tokens,
                            summary_tokens=fold.summary_tokens, latency_ms=latency_ms,
                            model=fold.model, guard=fold.guard, row_locked=True,
                            frozen_answers=fold.frozen)
        save_summary_version(claim.session_id, db=s, version=row.summary_version,
                             text=fold.summary, tokens=fold.summary_tokens,
                             covers_through=ids[-1], run_id=run_id,
                             keep=claim.settings.summary_versions_keep)
        if fold.facts:
            save_memories(claim.session_id, fold.facts, db=s, first_id=ids[0], last_id=ids[-1],
                          run_id=run_id)
        if claim.settings.archive_summarized:
            archive_messages(claim.session_id, ids, db=s, run_id=run_id)
        deleted = s.execute(_BATCH_DELETE, {"sid": claim.session_id, "ids": ids}).all()
        if len(deleted) != len(ids):
            raise Superseded(f"{len(ids) - len(deleted)} of the {len(ids)} batch messages "
                             "were already gone")
        version, message_count, now = row
        if message_count != fold.left:  # messages arrived during the call: plan on them too
            after = policy.plan(message_infos(claim.session_id, db=s),
                                summary_tokens=fold.summary_tokens,
                                t=claim.settings.thresholds())
            s.execute(update(SESSIONS).where(SESSIONS.c.id == claim.session_id)
                      .values(enqueued_at=now if after.should_summarize else None,
                              needs_escalation=after.needs_escalation,
                              **blocked_flags(after, claim.settings)._asdict()))
        return Outcome(
            claim.session_id, "applied", plan.reason, mode=plan.mode,
            messages_condensed=len(ids), summary_tokens=fold.summary_tokens,
            summary_version=version, more_work=after.should_summarize, model=fold.model,
            input_tokens=fold.input_tokens, output_tokens=fold.output_tokens,
            latency_ms=latency_ms,
            memories=len(fold.facts) if claim.settings.extract_memories or fold.facts
            else None)


def record_failure(claim: Claim, exc: BaseException, *, job: Job, status: Status,
                   model: str | None, latency_ms: int | None, secret: str | None = None,
                   spent: Usage | None = None) -> Outcome:
    """Release the lease and record a failed/superseded/dead run; nothing else changes."""
    settings = claim.settings
    error = None if status == "superseded" else describe_error(exc, secret=secret)
    reason = str(exc) if status == "superseded" else claim.plan.reason
    with core_transaction() as s:
        now = db_now(s)  # the cool-down and marker on the clock the sweeper reads
        release(claim.session_id, db=s, token=claim.token,
                blocked_until=(now + timedelta(seconds=settings.dead_cooldown_s)
                               if status == "dead" else None),
                # A retry is coming: keep the hook from queueing another job meanwhile.
                enqueued_at=now if status == "failed" else None)
        ids = claim.plan.batch_ids
        record_run(claim.session_id, db=s, task_id=job.task_id, attempt=job.attempt,
                   status=status, reason=reason, mode=claim.plan.mode, error=error,
                   model=model, latency_ms=latency_ms, first_message_id=ids[0],
                   last_message_id=ids[-1],
                   input_tokens=spent.input_tokens if spent else None,
                   output_tokens=spent.output_tokens if spent else None,
                   estimated_input_tokens=spent.estimated_input_tokens if spent else None,
                   frozen_answers=spent.frozen if spent else None)
    return Outcome(claim.session_id, status, reason, error=error, model=model,
                   latency_ms=latency_ms)


def summarize(session_id: str, *, job: Job, res: Resources, force: bool = False) -> Outcome:
    """Run one job end to end and record its outcome.

    ``force`` (``recap summarize --force``): condense the candidate batch even when
    no rule fires; the run's reason starts with ``forced:``.

    Uses ``res``'s summarizer, tuned for the session's overrides. Raises the
    (classified) error after recording a ``failed`` or ``dead`` run, so the
    caller can decide on a retry; the session is unchanged.
    """
    with tracing.span("recap.summarize_session", session_id=session_id, task_id=job.task_id,
                      attempt=job.attempt) as span:
        outcome = _summarize(session_id, job=job, res=res, force=force)
        span.set_attribute("recap.outcome", outcome.status)
        return outcome


def _summarize(session_id: str, *, job: Job, res: Resources, force: bool = False) -> Outcome:
    claimed = claim_session(session_id, job=job, settings=res.settings, force=force)
    if isinstance(claimed, Outcome):
        return log_outcome(claimed, job)
    tuned = claimed.settings
    stored = claimed.turns
    # Only what the model is sent changes; the guard reads the stored turns.
    turns, excerpted = excerpt_turns(stored, max_tokens=tuned.bulk_excerpt_tokens(),
                                     count=count_tokens)
    turns, clipped = clip_turns(turns, max_tokens=tuned.job_token_budget(),
                                count=count_tokens, split=split_by_tokens)
    notes = "".join(f"; {note}" for note in (excerpted, clipped) if note)
    if notes:
        claimed = dataclasses.replace(claimed, turns=turns, plan=dataclasses.replace(
            claimed.plan, reason=claimed.plan.reason + notes))
    summarizer = res.summarizer_for(tuned)
    spent = Usage(summarizer.model)
    started = time.monotonic()
    try:
        # With memories on, the same calls mine the batch before its rows go.
        result = summarizer.summarize(claimed.previous_summary, claimed.turns, usage=spent,
                                      facts=tuned.extract_memories, known=claimed.known)
        if spent.notes:  # a fallback was taken: the run's reason says which
            claimed = dataclasses.replace(claimed, plan=dataclasses.replace(
                claimed.plan, reason=claimed.plan.reason + "; " + "; ".join(spent.notes)))
        fold = retain(claimed, result, turns=stored, summarizer=summarizer, usage=spent)
        latency_ms = int((time.monotonic() - started) * 1000)
        return log_outcome(apply_summary(claimed, fold, job=job, latency_ms=latency_ms), job)
    except Superseded as exc:
        return log_outcome(record_failure(claimed, exc, job=job, status="superseded",
                                          model=summarizer.model, latency_ms=None), job)
    except Exception as exc:
        latency_ms = int((time.monotonic() - started) * 1000)
        mapped = classify(exc)
        repeat = isinstance(exc, UnusableSummary) and repeats_last_failure(
            session_id, describe_error(exc, secret=res.secret))
        if repeat:
            # The same unusable answer twice: the server is deterministic on this
            # request, and the same request again would only spend more.
            mapped = PermanentLLMError(f"the same unusable answer twice, not retried: {exc}")
        final = job.final_attempt or isinstance(mapped, PermanentLLMError)
        status: Status = "failed" if is_transient(mapped or exc) and not final else "dead"
        try:
            log_outcome(record_failure(
                claimed, mapped if repeat and mapped else exc, job=job, status=status,
                model=summarizer.model, latency_ms=latency_ms, secret=res.secret, spent=spent), job)
        except Exception as unrecorded:
            log_outcome(record_unrecorded(claimed, exc, unrecorded, job=job, secret=res.secret),
                        job)
        if mapped is not None and mapped is not exc:
            raise mapped from exc
        raise


def repeats_last_failure(session_id: str, error: str) -> bool:
    """Whether the session's last run failed with exactly ``error`` (which names the
    answer's digest, recap.llm.client.answer_digest)."""
    with core_transaction() as s:
        last = s.execute(select(RUNS.c.status, RUNS.c.error)
                         .where(RUNS.c.session_id == session_id)
                         .order_by(RUNS.c.id.desc()).limit(1)).one_or_none()
    return ("(answer sha256:" in error and last is not None and last.status == "failed"
            and last.error == error)


def record_unrecorded(claim: Claim, exc: BaseException, unrecorded: BaseException, *,
                      job: Job, secret: str | None) -> Outcome:
    """The failure could not be recorded (``unrecorded`` was raised doing it): release
    the lease on its own, so the next job does not count a worker as lost, and
    return an ``unrecorded`` outcome naming both errors for the log line."""
    try:
        with core_transaction() as s:
            release(claim.session_id, db=s, token=claim.token,
                    enqueued_at=db_now(s) if not job.final_attempt else None)
        released = "lease released"
    except Exception as again:  # the database itself is down: the lease expires
        released = f"lease not released ({type(again).__name__}); it expires"
    return Outcome(claim.session_id, "unrecorded",
                   f"could not record the failure: {describe_error(unrecorded, secret=secret)};"
                   f" {released}", error=describe_error(exc, secret=secret))
