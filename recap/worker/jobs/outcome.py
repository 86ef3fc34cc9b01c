"""The values a summarize job passes around, and how its errors are judged and shown."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, fields
from typing import Literal

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from recap.core.planning.policy import Mode
from recap.core.text import redact
from recap.db import first_line
from recap.errors import LLMError, TransientLLMError
from recap.llm.client import classify

log = logging.getLogger("recap.worker.jobs")


@dataclass(frozen=True)
class Job:
    """Who is running: the Celery task id, the attempt (1-based), whether it is the last."""

    task_id: str | None = None
    attempt: int = 1
    final_attempt: bool = True


# "unrecorded": the job failed and even recording that failed (see summarize.py).
Status = Literal["applied", "skipped", "superseded", "failed", "dead", "unrecorded"]


@dataclass
class Outcome:
    """What one job did; ``as_dict`` is the task's result and the log line."""

    session_id: str
    status: Status
    reason: str
    mode: Mode | None = None  # the plan's rule, when the job got as far as planning
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
        # Shallow (dataclasses.asdict deep-copies): the fields are plain values.
        out = {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}
        if self.mode is not None:
            out["mode"] = str(self.mode)  # plain JSON for the log line and the result
        return out


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
    mapped = classify(exc)
    shown = mapped if mapped is not None else exc
    # A database error's str() carries the SQL, and PostgreSQL's DETAIL may quote
    # the failing row (chat text): keep only the first line of the driver's message.
    text = f"{type(shown).__name__}: " + (first_line(exc) if isinstance(exc, DBAPIError)
                                         else str(shown))
    if mapped is not None and mapped is not exc:
        text = f"{type(mapped).__name__} ({type(exc).__name__}): {mapped}"
    return redact(text, secret)[:2000]


def log_outcome(outcome: Outcome, job: Job) -> Outcome:
    """One structured line per job outcome (never the API key: errors are redacted)."""
    line = {"event": "summarize", "session_id": outcome.session_id, "task_id": job.task_id,
            "attempt": job.attempt, **outcome.as_dict()}
    level = (logging.WARNING if outcome.status in ("failed", "dead", "unrecorded")
             else logging.INFO)
    log.log(level, json.dumps(line, default=str, ensure_ascii=False))
    return outcome
