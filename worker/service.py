"""One summarize job: claim -> summarize (+ mine memories) -> fenced apply.

Each public function here owns exactly one transaction. No transaction is open
while Claude is called. The apply is fenced by the lease token and the summary
version, and deletes (or archives) exactly the claimed ids or nothing.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import case, delete, select, update
from sqlalchemy.orm import Session

from models import messages_table as MESSAGES
from models import sessions_table as SESSIONS
from worker import policy
from worker.db import transaction
from worker.errors import InvalidInput, LLMError, PermanentLLMError
from worker.memories import Extraction
from worker.outcomes import (
    Job,
    Outcome,
    Superseded,
    describe_error,
    is_transient,
    log_outcome,
    thresholds,
    utcnow,
)
from worker.prompt import Turn
from worker.settings import Settings, effective
from worker.store import archive_messages, record_run, release, save_memories
from worker.summarizer import Summarizer, SummaryResult, classify
from worker.tokens import count_tokens

__all__ = ["Claim", "Job", "Outcome", "Superseded", "apply_summary", "claim_session",
           "is_transient", "record_failure", "record_rejected", "summarize", "thresholds",
           "utcnow"]

log = logging.getLogger("recap.jobs")


@dataclass(frozen=True)
class Claim:
    session_id: str
    token: str
    version: int
    previous_summary: str | None
    turns: list[Turn]
    plan: policy.Plan
    settings: Settings  # with this session's overrides applied
    # The active messages the plan saw; what is left after the apply is these
    # minus the batch, unless more arrived during the call.
    messages: tuple[policy.MessageInfo, ...] = ()


def _run(s: Session, session_id: str, job: Job, status: str, reason: str,
         **fields: object) -> int:
    return record_run(s, session_id, task_id=job.task_id, attempt=job.attempt, status=status,
                      reason=reason, **fields)


def record_rejected(session_id: object, reason: str, *, job: Job) -> Outcome:
    """Record a ``skipped`` run for a job given an id that cannot name a session."""
    shown = session_id if isinstance(session_id, str) else repr(session_id)
    shown = shown.encode("utf-8", "backslashreplace").decode().replace("\x00", "\\x00")[:255]
    with transaction() as s:
        _run(s, shown, job, "skipped", f"rejected session id: {reason}")
    return log_outcome(Outcome(shown, "skipped", f"rejected session id: {reason}"), job)


def claim_session(session_id: str, *, job: Job, settings: Settings,
                  now: datetime | None = None) -> Claim | Outcome:
    """Take the lease and read the batch, or record why not (skipped/dead)."""
    now = now or utcnow()
    token = str(uuid.uuid4())
    with transaction() as s:
        row = s.execute(
            update(SESSIONS)
            .where(SESSIONS.c.id == session_id,
                   (SESSIONS.c.lease_token.is_(None)) | (SESSIONS.c.lease_expires_at <= now))
            .values(lease_token=token, lease_expires_at=now + timedelta(seconds=settings.lease_s),
                    enqueued_at=None,
                    # An expired lease that is still set means its holder died mid-job.
                    lost_leases=SESSIONS.c.lost_leases
                    + case((SESSIONS.c.lease_token.isnot(None), 1), else_=0))
            .returning(SESSIONS.c.summary_version, SESSIONS.c.rolling_summary,
                       SESSIONS.c.summary_tokens, SESSIONS.c.lost_leases,
                       SESSIONS.c.overrides, SESSIONS.c.needs_escalation,
                       SESSIONS.c.normal_blocked)
        ).one_or_none()
        if row is None:
            exists = s.scalar(select(SESSIONS.c.id).where(SESSIONS.c.id == session_id))
            reason = ("lease held by another job" if exists
                      else f"session {session_id!r} not found")
            _run(s, session_id, job, "skipped", reason)
            return Outcome(session_id, "skipped", reason)

        version, previous, summary_tokens, lost, overrides, escalated, blocked = row
        dead_reason = None
        if lost > settings.max_lost_leases:
            dead_reason = (f"worker lost {lost} times in a row while holding this session's "
                           f"lease; dead-lettered (recap retry after fixing the cause)")
        try:
            settings = effective(settings, overrides)
        except InvalidInput as exc:
            dead_reason = f"{exc} (fix chat_sessions.overrides, then recap retry)"
        if dead_reason:
            release(s, session_id, token,
                    blocked_until=now + timedelta(seconds=settings.dead_cooldown_s))
            _run(s, session_id, job, "dead", dead_reason)
            return Outcome(session_id, "dead", dead_reason)

        messages = _message_infos(s, session_id)
        plan = policy.plan(messages, summary_tokens=summary_tokens, t=thresholds(settings))
        if (escalated, blocked) != (plan.needs_escalation, plan.normal_blocked):
            s.execute(update(SESSIONS).where(SESSIONS.c.id == session_id)
                      .values(needs_escalation=plan.needs_escalation,
                              normal_blocked=plan.normal_blocked))
        if not plan.should_summarize:
            release(s, session_id, token)
            _run(s, session_id, job, "skipped", plan.reason)
            return Outcome(session_id, "skipped", plan.reason)
        turns = _load_turns(s, session_id, plan.batch_ids)
        return Claim(session_id, token, version, previous, turns, plan, settings,
                     tuple(messages))


def _message_infos(s: Session, session_id: str) -> list[policy.MessageInfo]:
    """What the policy needs of the active messages, oldest first (no content)."""
    return [policy.MessageInfo(*r) for r in s.execute(
        select(MESSAGES.c.id, MESSAGES.c.role, MESSAGES.c.token_count, MESSAGES.c.pinned)
        .where(MESSAGES.c.session_id == session_id).order_by(MESSAGES.c.id))]


def _load_turns(s: Session, session_id: str, ids: Sequence[int]) -> list[Turn]:
    wanted = set(ids)
    rows = s.execute(
        select(MESSAGES.c.id, MESSAGES.c.role, MESSAGES.c.content)
        .where(MESSAGES.c.session_id == session_id,
               MESSAGES.c.id.between(min(wanted), max(wanted)))
        .order_by(MESSAGES.c.id)).yield_per(500)
    return [Turn(i, role, content) for i, role, content in rows if i in wanted]


def apply_summary(claim: Claim, result: SummaryResult, *, job: Job, settings: Settings,
                  latency_ms: int, extraction: Extraction | None = None) -> Outcome:
    """In one transaction: write the summary, store the mined memories, delete (or
    archive) exactly the batch, record the run.

    Raises Superseded (and changes nothing) when the claim no longer holds.
    """
    now = utcnow()
    ids = claim.plan.batch_ids
    summary_tokens = count_tokens(result.text)
    spent_in = result.input_tokens + (extraction.usage.input_tokens if extraction else 0)
    spent_out = result.output_tokens + (extraction.usage.output_tokens if extraction else 0)
    # Plan again on what will be left, to queue a follow-up only for real work and
    # to record whether the normal rule can fire before the next summary.
    taken = set(ids)
    left = [m for m in claim.messages if m.id not in taken]
    after = policy.plan(left, summary_tokens=summary_tokens, t=thresholds(claim.settings))
    with transaction() as s:
        row = s.execute(
            update(SESSIONS)
            .where(SESSIONS.c.id == claim.session_id, SESSIONS.c.lease_token == claim.token,
                   SESSIONS.c.summary_version == claim.version)
            .values(rolling_summary=result.text, summary_tokens=summary_tokens,
                    summary_version=SESSIONS.c.summary_version + 1,
                    summarized_message_count=SESSIONS.c.summarized_message_count + len(ids),
                    message_count=SESSIONS.c.message_count - len(ids),
                    active_tokens=SESSIONS.c.active_tokens - claim.plan.batch_tokens,
                    summary_updated_at=now, lease_token=None, lease_expires_at=None,
                    lost_leases=0, blocked_until=None,
                    enqueued_at=now if after.should_summarize else None,
                    normal_blocked=after.normal_blocked,
                    needs_escalation=after.needs_escalation)
            .returning(SESSIONS.c.summary_version, SESSIONS.c.message_count)
        ).one_or_none()
        if row is None:
            raise Superseded("the lease or summary version changed during the call")
        run_id = _run(s, claim.session_id, job, "applied", claim.plan.reason,
                      messages_condensed=len(ids), condensed_tokens=claim.plan.batch_tokens,
                      first_message_id=ids[0], last_message_id=ids[-1],
                      input_tokens=spent_in, output_tokens=spent_out,
                      summary_tokens=summary_tokens, latency_ms=latency_ms, model=result.model)
        if extraction is not None:
            save_memories(s, claim.session_id, extraction.facts, first_id=ids[0],
                          last_id=ids[-1])
        if settings.archive_summarized:
            archive_messages(s, claim.session_id, ids, run_id=run_id)
        deleted = s.execute(delete(MESSAGES)
                            .where(MESSAGES.c.session_id == claim.session_id,
                                   MESSAGES.c.id.in_(ids))
                            .returning(MESSAGES.c.id)).all()
        if len(deleted) != len(ids):
            raise Superseded(f"{len(ids) - len(deleted)} of the {len(ids)} batch messages "
                             "were already gone")
        version, message_count = row
        if message_count != len(left):  # messages arrived during the call: plan on them too
            after = policy.plan(_message_infos(s, claim.session_id),
                                summary_tokens=summary_tokens, t=thresholds(claim.settings))
            s.execute(update(SESSIONS).where(SESSIONS.c.id == claim.session_id)
                      .values(enqueued_at=now if after.should_summarize else None,
                              normal_blocked=after.normal_blocked,
                              needs_escalation=after.needs_escalation))
        more = after.should_summarize
        return Outcome(
            claim.session_id, "applied", claim.plan.reason, messages_condensed=len(ids),
            summary_tokens=summary_tokens, summary_version=version, more_work=more,
            model=result.model, input_tokens=spent_in, output_tokens=spent_out,
            latency_ms=latency_ms, memories=len(extraction.facts) if extraction else None)


def record_failure(claim: Claim, exc: BaseException, *, job: Job, settings: Settings,
                   status: str, model: str | None, latency_ms: int | None,
                   spent: SummaryResult | None = None) -> Outcome:
    """Release the lease and record a failed/superseded/dead run; nothing else changes."""
    now = utcnow()
    secret = (settings.anthropic_api_key.get_secret_value()
              if settings.anthropic_api_key else None)
    error = None if status == "superseded" else describe_error(exc, secret=secret)
    reason = str(exc) if status == "superseded" else claim.plan.reason
    with transaction() as s:
        release(s, claim.session_id, claim.token,
                blocked_until=(now + timedelta(seconds=settings.dead_cooldown_s)
                               if status == "dead" else None),
                # A retry is coming: keep the hook from queueing another job meanwhile.
                enqueued_at=now if status == "failed" else None)
        ids = claim.plan.batch_ids
        _run(s, claim.session_id, job, status, reason, error=error, model=model,
             latency_ms=latency_ms, first_message_id=ids[0], last_message_id=ids[-1],
             input_tokens=spent.input_tokens if spent else None,
             output_tokens=spent.output_tokens if spent else None)
    return Outcome(claim.session_id, status, reason, error=error, model=model,
                   latency_ms=latency_ms)


def summarize(session_id: str, *, job: Job, settings: Settings,
              summarizer: Summarizer | None = None) -> Outcome:
    """Run one job end to end and record its outcome.

    ``summarizer`` defaults to the process's one, tuned for the session's
    overrides. Raises the (classified) error after recording a ``failed`` or
    ``dead`` run, so the caller can decide on a retry; the session is unchanged.
    """
    from worker import tracing

    with tracing.span("recap.summarize_session", session_id=session_id, task_id=job.task_id,
                      attempt=job.attempt) as span:
        outcome = _summarize(session_id, job=job, settings=settings, summarizer=summarizer)
        span.set_attribute("recap.outcome", outcome.status)
        return outcome


def _summarize(session_id: str, *, job: Job, settings: Settings,
               summarizer: Summarizer | None) -> Outcome:
    from worker import runtime

    claimed = claim_session(session_id, job=job, settings=settings)
    if isinstance(claimed, Outcome):
        return log_outcome(claimed, job)
    tuned = claimed.settings
    summarizer = summarizer or runtime.summarizer_for(tuned)
    started = time.monotonic()
    try:
        result = summarizer.summarize(claimed.previous_summary, claimed.turns)
        # Mine the batch before its rows go; a failure here fails the job (retried).
        extraction = (runtime.extractor_for(tuned).extract(claimed.turns)
                      if tuned.extract_memories else None)
        latency_ms = int((time.monotonic() - started) * 1000)
        return log_outcome(apply_summary(claimed, result, job=job, settings=tuned,
                                         latency_ms=latency_ms, extraction=extraction), job)
    except Superseded as exc:
        return log_outcome(record_failure(claimed, exc, job=job, settings=tuned,
                                          status="superseded", model=summarizer.model,
                                          latency_ms=None), job)
    except Exception as exc:
        latency_ms = int((time.monotonic() - started) * 1000)
        mapped = classify(exc) if not isinstance(exc, LLMError) else exc
        final = job.final_attempt or isinstance(mapped, PermanentLLMError)
        status = "failed" if is_transient(mapped or exc) and not final else "dead"
        try:
            spent = getattr(mapped, "partial", None)
            log_outcome(record_failure(
                claimed, exc, job=job, settings=tuned, status=status, model=summarizer.model,
                latency_ms=latency_ms,
                spent=spent if isinstance(spent, SummaryResult) else None), job)
        except Exception:  # the database itself may be the failure; the lease expires
            log.exception("could not record the failure of session %s", session_id)
        if mapped is not None and mapped is not exc:
            raise mapped from exc
        raise
