"""One summarize job: claim -> call the summarizer -> fenced apply.

Each public function here owns exactly one transaction. No transaction is open
while the summarizer runs. The apply is fenced by the lease token and the
summary version, and deletes exactly the claimed ids or nothing.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import case, delete, insert, select, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from models import ChatMessage, ChatSession, SummaryRun
from worker import policy
from worker.db import transaction
from worker.errors import LLMError, PermanentLLMError, TransientLLMError
from worker.prompt import Turn
from worker.settings import Settings
from worker.summarizer import Summarizer, SummaryResult, classify
from worker.tokens import count_tokens

log = logging.getLogger("recap.jobs")


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Job:
    """Who is running: the Celery task id, the attempt (1-based), whether it is the last."""

    task_id: str | None = None
    attempt: int = 1
    final_attempt: bool = True


@dataclass(frozen=True)
class Claim:
    session_id: str
    token: str
    version: int
    previous_summary: str | None
    turns: list[Turn]
    plan: policy.Plan


@dataclass
class Outcome:
    session_id: str
    status: str
    reason: str
    messages_condensed: int = 0
    summary_tokens: int | None = None
    summary_version: int | None = None
    more_work: bool = False
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: int | None = None
    error: str | None = None
    extra: dict[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if v is not None and k != "extra"}


class Superseded(Exception):
    """The claim no longer holds: lease lost, version moved, or a batch row is gone."""


def thresholds(settings: Settings) -> policy.Thresholds:
    return policy.Thresholds(
        trigger_messages=settings.trigger_messages, trigger_tokens=settings.trigger_tokens,
        batch_size=settings.batch_size, keep_recent=settings.keep_recent,
        context_budget_tokens=settings.context_budget_tokens,
        # About two full requests per job: a backlog drains over follow-up jobs
        # instead of one job running past its time limit and retrying forever.
        max_batch_tokens=2 * settings.llm_max_input_tokens)


def is_transient(exc: BaseException) -> bool:
    """Errors worth a Celery retry: transient API errors and lost DB connections."""
    if isinstance(exc, TransientLLMError):
        return True
    if isinstance(exc, LLMError):
        return False
    if isinstance(exc, DBAPIError):
        return True  # connection dropped, failover, lock timeout: the job is safe to rerun
    from celery.exceptions import SoftTimeLimitExceeded

    return isinstance(exc, SoftTimeLimitExceeded | TimeoutError | ConnectionError)


def describe_error(exc: BaseException, *, secret: str | None = None) -> str:
    """``Class: message`` for audit rows and logs, with any secret redacted."""
    mapped = classify(exc) if not isinstance(exc, LLMError) else exc
    shown = mapped if mapped is not None else exc
    text = f"{type(shown).__name__}: {shown}"
    if mapped is not None and mapped is not exc:
        text = f"{type(mapped).__name__} ({type(exc).__name__}): {mapped}"
    if secret:
        text = text.replace(secret, "[redacted]")
    return text[:2000]


def _record(session: Session, session_id: str, job: Job, status: str, reason: str,
            **fields: object) -> None:
    session.execute(insert(SummaryRun).values(
        session_id=session_id[:255], task_id=job.task_id, attempt=job.attempt, status=status,
        reason=reason, **fields))


def _log(outcome: Outcome, job: Job) -> Outcome:
    line = {"event": "summarize", "session_id": outcome.session_id, "task_id": job.task_id,
            "attempt": job.attempt, **outcome.as_dict()}
    level = logging.WARNING if outcome.status in ("failed", "dead") else logging.INFO
    log.log(level, json.dumps(line, default=str, ensure_ascii=False))
    return outcome


def claim_session(session_id: str, *, job: Job, settings: Settings,
                  now: datetime | None = None) -> Claim | Outcome:
    """Take the lease and read the batch, or record why not (skipped/dead)."""
    now = now or utcnow()
    token = str(uuid.uuid4())
    with transaction() as s:
        row = s.execute(
            update(ChatSession)
            .where(ChatSession.id == session_id,
                   (ChatSession.lease_token.is_(None)) | (ChatSession.lease_expires_at <= now))
            .values(lease_token=token, lease_expires_at=now + timedelta(seconds=settings.lease_s),
                    enqueued_at=None,
                    # An expired lease that is still set means its holder died mid-job.
                    lost_leases=ChatSession.lost_leases
                    + case((ChatSession.lease_token.isnot(None), 1), else_=0))
            .returning(ChatSession.summary_version, ChatSession.rolling_summary,
                       ChatSession.summary_tokens, ChatSession.lost_leases)
        ).one_or_none()
        if row is None:
            exists = s.scalar(select(ChatSession.id).where(ChatSession.id == session_id))
            reason = ("lease held by another job" if exists
                      else f"session {session_id!r} not found")
            _record(s, session_id, job, "skipped", reason)
            return Outcome(session_id, "skipped", reason)

        version, previous, summary_tokens, lost = row
        if lost > settings.max_lost_leases:
            reason = (f"worker lost {lost} times in a row while holding this session's lease; "
                      f"dead-lettered (recap retry {session_id} after fixing the cause)")
            _release(s, session_id, token, blocked_until=now + timedelta(
                seconds=settings.dead_cooldown_s))
            _record(s, session_id, job, "dead", reason)
            return Outcome(session_id, "dead", reason)

        messages = [policy.MessageInfo(*r) for r in s.execute(
            select(ChatMessage.id, ChatMessage.role, ChatMessage.token_count, ChatMessage.pinned)
            .where(ChatMessage.session_id == session_id).order_by(ChatMessage.id))]
        plan = policy.plan(messages, summary_tokens=summary_tokens, t=thresholds(settings))
        s.execute(update(ChatSession).where(ChatSession.id == session_id)
                  .values(needs_escalation=plan.needs_escalation,
                          normal_blocked=plan.normal_blocked))
        if not plan.should_summarize:
            _release(s, session_id, token)
            _record(s, session_id, job, "skipped", plan.reason)
            return Outcome(session_id, "skipped", plan.reason)
        turns = _load_turns(s, session_id, plan.batch_ids)
        return Claim(session_id, token, version, previous, turns, plan)


def _load_turns(s: Session, session_id: str, ids: Sequence[int]) -> list[Turn]:
    wanted = set(ids)
    rows = s.execute(
        select(ChatMessage.id, ChatMessage.role, ChatMessage.content)
        .where(ChatMessage.session_id == session_id,
               ChatMessage.id.between(min(wanted), max(wanted)))
        .order_by(ChatMessage.id)).yield_per(500)
    return [Turn(i, role, content) for i, role, content in rows if i in wanted]


def _release(s: Session, session_id: str, token: str, *,
             blocked_until: datetime | None = None, enqueued_at: datetime | None = None) -> None:
    values: dict[str, object] = {"lease_token": None, "lease_expires_at": None,
                                 "lost_leases": 0, "enqueued_at": enqueued_at}
    if blocked_until is not None:
        values["blocked_until"] = blocked_until
    s.execute(update(ChatSession)
              .where(ChatSession.id == session_id, ChatSession.lease_token == token)
              .values(**values))


def apply_summary(claim: Claim, result: SummaryResult, *, job: Job, settings: Settings,
                  latency_ms: int) -> Outcome:
    """In one transaction: write the summary, delete exactly the batch, record the run.

    Raises Superseded (and changes nothing) when the claim no longer holds.
    """
    now = utcnow()
    ids = claim.plan.batch_ids
    summary_tokens = count_tokens(result.text)
    with transaction() as s:
        row = s.execute(
            update(ChatSession)
            .where(ChatSession.id == claim.session_id, ChatSession.lease_token == claim.token,
                   ChatSession.summary_version == claim.version)
            .values(rolling_summary=result.text, summary_tokens=summary_tokens,
                    summary_version=ChatSession.summary_version + 1,
                    summarized_message_count=ChatSession.summarized_message_count + len(ids),
                    message_count=ChatSession.message_count - len(ids),
                    active_tokens=ChatSession.active_tokens - claim.plan.batch_tokens,
                    summary_updated_at=now, lease_token=None, lease_expires_at=None,
                    lost_leases=0, blocked_until=None, normal_blocked=False)
            .returning(ChatSession.summary_version, ChatSession.message_count,
                       ChatSession.active_tokens)
        ).one_or_none()
        if row is None:
            raise Superseded("the lease or summary version changed during the call")
        deleted = s.execute(delete(ChatMessage)
                            .where(ChatMessage.session_id == claim.session_id,
                                   ChatMessage.id.in_(ids))
                            .returning(ChatMessage.id)).all()
        if len(deleted) != len(ids):
            raise Superseded(f"{len(ids) - len(deleted)} of the {len(ids)} batch messages "
                             "were already gone")
        version, message_count, active_tokens = row
        more = policy.might_trigger(message_count=message_count, active_tokens=active_tokens,
                                    summary_tokens=summary_tokens, t=thresholds(settings))
        if more:
            s.execute(update(ChatSession).where(ChatSession.id == claim.session_id)
                      .values(enqueued_at=now))
        outcome = Outcome(
            claim.session_id, "applied", claim.plan.reason, messages_condensed=len(ids),
            summary_tokens=summary_tokens, summary_version=version, more_work=more,
            model=result.model, input_tokens=result.input_tokens,
            output_tokens=result.output_tokens, latency_ms=latency_ms)
        _record(s, claim.session_id, job, "applied", claim.plan.reason,
                messages_condensed=len(ids), condensed_tokens=claim.plan.batch_tokens,
                first_message_id=ids[0], last_message_id=ids[-1],
                input_tokens=result.input_tokens, output_tokens=result.output_tokens,
                summary_tokens=summary_tokens, latency_ms=latency_ms, model=result.model)
        return outcome


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
        _release(s, claim.session_id, claim.token,
                 blocked_until=(now + timedelta(seconds=settings.dead_cooldown_s)
                                if status == "dead" else None),
                 # A retry is coming: keep the hook from queueing another job meanwhile.
                 enqueued_at=now if status == "failed" else None)
        ids = claim.plan.batch_ids
        _record(s, claim.session_id, job, status, reason, error=error, model=model,
                latency_ms=latency_ms, first_message_id=ids[0], last_message_id=ids[-1],
                input_tokens=spent.input_tokens if spent else None,
                output_tokens=spent.output_tokens if spent else None)
    return Outcome(claim.session_id, status, reason, error=error, model=model,
                   latency_ms=latency_ms)


def summarize(session_id: str, *, job: Job, summarizer: Summarizer,
              settings: Settings) -> Outcome:
    """Run one job end to end and record its outcome.

    Raises the (classified) error after recording a ``failed`` or ``dead`` run,
    so the caller can decide on a retry; the session is unchanged in that case.
    """
    claimed = claim_session(session_id, job=job, settings=settings)
    if isinstance(claimed, Outcome):
        return _log(claimed, job)
    started = time.monotonic()
    try:
        result = summarizer.summarize(claimed.previous_summary, claimed.turns)
        latency_ms = int((time.monotonic() - started) * 1000)
        return _log(apply_summary(claimed, result, job=job, settings=settings,
                                  latency_ms=latency_ms), job)
    except Superseded as exc:
        return _log(record_failure(claimed, exc, job=job, settings=settings,
                                   status="superseded", model=summarizer.model,
                                   latency_ms=None), job)
    except Exception as exc:
        latency_ms = int((time.monotonic() - started) * 1000)
        mapped = classify(exc) if not isinstance(exc, LLMError) else exc
        final = job.final_attempt or isinstance(mapped, PermanentLLMError)
        status = "failed" if is_transient(mapped or exc) and not final else "dead"
        try:
            spent = getattr(mapped, "partial", None)
            outcome = record_failure(claimed, exc, job=job, settings=settings, status=status,
                                     model=summarizer.model, latency_ms=latency_ms,
                                     spent=spent if isinstance(spent, SummaryResult) else None)
            _log(outcome, job)
        except Exception:  # the database itself may be the failure; the lease expires
            log.exception("could not record the failure of session %s", session_id)
        if mapped is not None and mapped is not exc:
            raise mapped from exc
        raise
