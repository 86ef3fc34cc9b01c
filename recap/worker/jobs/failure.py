"""What a summarize job that did not apply records: the lease released, and a
``superseded``, ``failed`` or ``dead`` run. Nothing else changes. (A job whose model
gave no usable answer any way, or that ran out of retries at capacity, does not come
here: recap.worker.jobs.fallback keeps its batch extractively and it applies.)

:func:`record_failed` judges the error (a retry, or dead-lettered) and records it;
:func:`record_failure` owns the one transaction that writes it;
:func:`record_unrecorded` is the last resort when even that fails.
"""

from __future__ import annotations

from datetime import timedelta

from recap.db import core_transaction, db_now
from recap.errors import PermanentLLMError
from recap.llm.client import Usage, classify
from recap.store.fence import release
from recap.store.runs import RunRecord, record_run
from recap.worker.jobs.claim import Claim
from recap.worker.jobs.outcome import (
    Job,
    Outcome,
    Status,
    describe_error,
    is_transient,
    log_outcome,
)


def record_failed(claim: Claim, exc: Exception, *, job: Job, reason: str, model: str,
                  latency_ms: int, secret: str | None, spent: Usage) -> BaseException:
    """Record the ``failed`` run (a retry is coming) or the ``dead`` one that ``exc``
    ended the job with, and log it; returns the error the caller raises: ``exc``,
    or what it is classified as (recap.llm.client.classify)."""
    mapped = classify(exc)
    final = job.final_attempt or isinstance(mapped, PermanentLLMError)
    status: Status = "failed" if is_transient(mapped or exc) and not final else "dead"
    try:
        log_outcome(record_failure(claim, exc, job=job, status=status, reason=reason,
                                   model=model, latency_ms=latency_ms, secret=secret,
                                   spent=spent), job)
    except Exception as unrecorded:
        log_outcome(record_unrecorded(claim, exc, unrecorded, job=job, secret=secret), job)
    return mapped if mapped is not None else exc


def record_failure(claim: Claim, exc: BaseException, *, job: Job, status: Status,
                   model: str | None, latency_ms: int | None, reason: str | None = None,
                   secret: str | None = None, spent: Usage | None = None) -> Outcome:
    """Release the lease and record a failed/superseded/dead run; nothing else changes.
    ``reason``: the run's (default the plan's; the job passes it with the notes of
    the steps that ran); a superseded run gives ``exc`` as its reason instead."""
    settings = claim.settings
    error = None if status == "superseded" else describe_error(exc, secret=secret)
    if status == "superseded":
        reason = str(exc)
    elif reason is None:
        reason = claim.plan.reason
    with core_transaction() as s:
        now = db_now(s)  # the cool-down and marker on the clock the sweeper reads
        release(claim.session_id, db=s, token=claim.token,
                blocked_until=(now + timedelta(seconds=settings.dead_cooldown_s)
                               if status == "dead" else None),
                # A retry is coming: keep the hook from queueing another job meanwhile.
                enqueued_at=now if status == "failed" else None)
        ids = claim.plan.batch_ids
        record_run(RunRecord(
            session_id=claim.session_id, task_id=job.task_id, attempt=job.attempt,
            status=status, reason=reason, mode=claim.plan.mode, error=error, model=model,
            latency_ms=latency_ms, first_message_id=ids[0], last_message_id=ids[-1],
            input_tokens=spent.input_tokens if spent else None,
            output_tokens=spent.output_tokens if spent else None,
            estimated_input_tokens=spent.estimated_input_tokens if spent else None,
            frozen_answers=spent.frozen if spent else None,
            resends=spent.resends if spent else None,
            resend_input_tokens=spent.resend_input_tokens if spent else None), db=s)
    return Outcome(claim.session_id, status, reason, error=error, model=model,
                   latency_ms=latency_ms)


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
