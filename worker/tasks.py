"""Celery tasks: thin wrappers that handle retries and events; logic is in service."""

from __future__ import annotations

import random
from typing import Any

from worker import service, titles
from worker.celery_app import app
from worker.enqueue import send
from worker.errors import InvalidInput, TransientLLMError
from worker.ingest import check_session_id
from worker.policy import retry_delay
from worker.settings import Settings, get_settings
from worker.sweeper import sweep as sweep_sessions


def _retry_or_fail(task: Any, exc: Exception, session_id: str, *, settings: Settings,
                   event: str) -> None:
    """Raise Celery's Retry (backoff with jitter, honouring retry-after) for a
    transient error with retries left; else send ``event`` and return to re-raise."""
    retries = task.request.retries
    if service.is_transient(exc) and retries < settings.max_retries:
        after = exc.retry_after if isinstance(exc, TransientLLMError) else None
        delay = retry_delay(retries, retry_after=after, base=settings.retry_backoff_s,
                            cap=settings.retry_backoff_max_s, rand=random.random())
        raise task.retry(exc=exc, countdown=delay, max_retries=settings.max_retries) from exc
    task.send_event(event, session_id=session_id, error_class=type(exc).__name__)


@app.task(bind=True, name="worker.tasks.summarize_session", acks_late=True,
          reject_on_worker_lost=True)
def summarize_session(self: Any, session_id: str) -> dict[str, object]:
    """Fold the oldest messages of ``session_id`` into its rolling summary."""
    settings = get_settings()
    retries = self.request.retries
    job = service.Job(task_id=self.request.id, attempt=retries + 1,
                      final_attempt=retries >= settings.max_retries)
    try:
        check_session_id(session_id)
    except InvalidInput as exc:
        # Never retried: record it under a storable rendering of the bad id.
        return service.record_rejected(session_id, str(exc), job=job).as_dict()
    try:
        outcome = service.summarize(session_id, job=job, settings=settings)
    except Exception as exc:
        _retry_or_fail(self, exc, session_id, settings=settings, event="summarization-failed")
        raise
    if outcome.status == "applied":
        self.send_event("summarization-complete", session_id=session_id,
                        turns_condensed=outcome.messages_condensed,
                        summary_tokens=outcome.summary_tokens)
    if outcome.more_work:
        send(session_id)  # the follow-up; its pending marker was set with the apply
    return outcome.as_dict()


@app.task(bind=True, name="worker.tasks.generate_title", acks_late=True,
          reject_on_worker_lost=True)
def generate_title(self: Any, session_id: str) -> str | None:
    """Give ``session_id`` a title after its first exchange; a no-op once it has one."""
    settings = get_settings()
    try:
        check_session_id(session_id)
    except InvalidInput:
        return None  # nothing to title and nothing a retry could change
    try:
        return titles.title_session(session_id, settings=settings)
    except Exception as exc:
        # After the last retry the title stays NULL; its marker goes stale and the
        # sweeper queues it again.
        _retry_or_fail(self, exc, session_id, settings=settings, event="title-failed")
        raise


@app.task(name="worker.tasks.sweep", acks_late=True)
def sweep() -> int:
    """Queue every session that needs work and has no live lease or pending job."""
    return sweep_sessions(get_settings())
