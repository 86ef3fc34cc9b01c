"""The Celery edge: thin tasks that handle retries and events, and the worker's
process signals. The work is in recap.worker.jobs; publishers send these by name."""

from __future__ import annotations

import logging
import random
import sys
from typing import Any

from celery.signals import worker_init, worker_process_init

from recap import tracing
from recap.core.planning.policy import retry_delay
from recap.core.validate import check_session_id
from recap.db import get_engine, scrub
from recap.errors import ConfigError, InvalidInput, TransientLLMError
from recap.llm.probe import probe
from recap.llm.tokens import count_tokens
from recap.store.enqueue import send
from recap.worker.celery_app import app
from recap.worker.jobs import titles
from recap.worker.jobs.claim import record_rejected
from recap.worker.jobs.outcome import Job, Outcome, is_transient, log_outcome
from recap.worker.jobs.resources import Resources, get_resources, reset_process_state
from recap.worker.jobs.summarize import summarize
from recap.worker.jobs.sweeper import sweep as sweep_sessions

log = logging.getLogger("recap.worker.tasks")

# A task's return value is what Flower shows as its result (no result backend
# keeps it): one short line, status first, never chat text.
RESULT_MAX_CHARS = 160


def _short(line: str) -> str:
    return line if len(line) <= RESULT_MAX_CHARS else line[:RESULT_MAX_CHARS - 3] + "..."


def result_line(outcome: Outcome) -> str:
    """``applied 20 msgs v7 (normal)``, ``skipped: lease held by another job``..."""
    if outcome.status == "applied":
        line = f"applied {outcome.messages_condensed} msgs v{outcome.summary_version}"
        line += f" ({outcome.mode})" if outcome.mode else ""
        return _short(line + (", more queued" if outcome.more_work else ""))
    return _short(f"{outcome.status}: {outcome.reason}")


def _retry_or_fail(task: Any, exc: Exception, session_id: str, *, res: Resources,
                   event: str) -> None:
    """Raise Celery's Retry (backoff with jitter, honouring retry-after) for a
    transient error with retries left; else send ``event`` and return to re-raise.

    Either way ``exc`` is scrubbed first: what Celery logs and Flower shows must
    not quote chat text (see recap.db.scrub)."""
    scrub(exc)
    settings = res.settings
    retries = task.request.retries
    if is_transient(exc) and retries < settings.max_retries:
        after = exc.retry_after if isinstance(exc, TransientLLMError) else None
        delay = retry_delay(retries, retry_after=after, base=settings.retry_backoff_s,
                            cap=settings.retry_backoff_max_s, rand=random.random())
        raise task.retry(exc=exc, countdown=delay, max_retries=settings.max_retries) from exc
    _send_event_safely(task, event, session_id=session_id, error_class=type(exc).__name__)


@app.task(bind=True, name="recap.tasks.summarize_session", acks_late=True,
          reject_on_worker_lost=True)
def summarize_session(self: Any, session_id: str) -> str:
    """Fold the oldest messages of ``session_id`` into its rolling summary; returns
    the outcome as :func:`result_line` puts it."""
    res = get_resources()
    retries = self.request.retries
    job = Job(task_id=self.request.id, attempt=retries + 1,
              final_attempt=retries >= res.settings.max_retries)
    try:
        check_session_id(session_id)
    except InvalidInput as exc:
        # Never retried: record it under a storable rendering of the bad id.
        return result_line(log_outcome(record_rejected(session_id, str(exc), job=job), job))
    try:
        outcome = summarize(session_id, job=job, res=res)
    except Exception as exc:
        _retry_or_fail(self, exc, session_id, res=res, event="summarization-failed")
        raise
    # The apply has committed: nothing from here on may fail the task or skip the
    # follow-up (a lost event only costs Flower a line; a lost follow-up would
    # leave the session waiting for the sweeper).
    if outcome.status == "applied":
        _send_event_safely(self, "summarization-complete", session_id=session_id,
                           turns_condensed=outcome.messages_condensed,
                           summary_tokens=outcome.summary_tokens)
    if outcome.more_work:
        send(session_id)  # never raises; its pending marker was set with the apply
    return result_line(outcome)


def _send_event_safely(task: Any, event: str, **fields: Any) -> None:
    try:
        task.send_event(event, **fields)
    except Exception as exc:
        log.warning("could not send the %s event for session %r (%s: %s)", event,
                    fields.get("session_id"), type(exc).__name__, exc)


@app.task(bind=True, name="recap.tasks.generate_title", acks_late=True,
          reject_on_worker_lost=True)
def generate_title(self: Any, session_id: str) -> str:
    """Give ``session_id`` a title after its first exchange; a no-op once it has one.
    Returns ``titled`` or ``skipped: why`` (never the title: it quotes the chat)."""
    res = get_resources()
    try:
        check_session_id(session_id)
    except InvalidInput:
        return "skipped: rejected session id"  # nothing a retry could change
    try:
        title = titles.title_session(session_id, res=res)
    except Exception as exc:
        # After the last retry the title stays NULL; its marker goes stale and the
        # sweeper queues it again.
        _retry_or_fail(self, exc, session_id, res=res, event="title-failed")
        raise
    if title is None:
        return "skipped: no user/assistant exchange yet, or no such session"
    return "titled"


@app.task(name="recap.tasks.sweep", acks_late=True)
def sweep() -> str:
    """Queue every session that needs work and has no live lease or pending job;
    returns ``queued N sessions``."""
    queued = sweep_sessions(get_resources().settings)
    return f"queued {queued} session{'' if queued == 1 else 's'}"


@worker_init.connect
def _validate_at_start(**_: Any) -> None:
    # Fail the worker at start-up (bad prompt file, offline in production, no
    # tokenizer) rather than on its first job.
    try:
        res = get_resources()
        count_tokens("warm up")
        # Before the first message is consumed: a database that is unreachable or
        # not at the migration head ends the worker here (DatabaseNotReady), so no
        # job is taken only to fail.
        get_engine()
    except ConfigError as exc:
        # Celery only logs exceptions raised by signal handlers; exit for real.
        print(f"recap: error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    check_model_and_key(res)


def check_model_and_key(res: Resources) -> None:
    """One cheap call (``recap check``) at start; a wrong key or model name is logged
    once as a warning, naming which. The worker still starts: an outage at start
    proves nothing, and a fixed key or model is picked up by a restart anyway."""
    if res.client is None or not res.settings.check_at_start:
        return
    result = probe(res.client)
    if not result.ok:
        log.warning("recap check at worker start: %s is wrong or unproven: %s",
                    result.problem, res.redact(result.message))


@worker_process_init.connect
def _after_fork(**_: Any) -> None:
    # Pooled connections and the HTTP client must not be shared across fork.
    reset_process_state(close=False)
    get_resources()  # rebuilt for this process (and tracing configured from settings)
    tracing.configure_provider()  # no-op if inherited: the SDK is fork-safe
    tracing.instrument_celery()
