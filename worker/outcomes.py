"""The values a summarize job passes around, and how its errors are judged and shown."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from worker import policy
from worker.errors import LLMError, TransientLLMError
from worker.settings import Settings
from worker.summarizer import classify

log = logging.getLogger("recap.jobs")


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Job:
    """Who is running: the Celery task id, the attempt (1-based), whether it is the last."""

    task_id: str | None = None
    attempt: int = 1
    final_attempt: bool = True


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
    memories: int | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if v is not None}


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
    if isinstance(exc, OperationalError | InterfaceError):
        return True  # connection dropped, failover, lock timeout: the job is safe to rerun
    from celery.exceptions import SoftTimeLimitExceeded

    return isinstance(exc, SoftTimeLimitExceeded | TimeoutError | ConnectionError)


def describe_error(exc: BaseException, *, secret: str | None = None) -> str:
    """``Class: message`` for audit rows and logs, with any secret redacted."""
    mapped = classify(exc) if not isinstance(exc, LLMError) else exc
    shown = mapped if mapped is not None else exc
    # A database error's str() carries the SQL and its parameters (chat text):
    # keep only the driver's message.
    text = f"{type(shown).__name__}: " + (str(exc.orig) if isinstance(exc, DBAPIError)
                                         else str(shown))
    if mapped is not None and mapped is not exc:
        text = f"{type(mapped).__name__} ({type(exc).__name__}): {mapped}"
    if secret:
        text = text.replace(secret, "[redacted]")
    return text[:2000]


def log_outcome(outcome: Outcome, job: Job) -> Outcome:
    """One structured line per job outcome (never the API key: errors are redacted)."""
    line = {"event": "summarize", "session_id": outcome.session_id, "task_id": job.task_id,
            "attempt": job.attempt, **outcome.as_dict()}
    level = logging.WARNING if outcome.status in ("failed", "dead") else logging.INFO
    log.log(level, json.dumps(line, default=str, ensure_ascii=False))
    return outcome
