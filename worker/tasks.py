"""Celery tasks: thin wrappers that handle retries and events; logic is in service."""

from __future__ import annotations

import random
from typing import Any

from worker import service
from worker.celery_app import app
from worker.enqueue import send
from worker.errors import TransientLLMError
from worker.policy import retry_delay
from worker.runtime import get_summarizer
from worker.settings import get_settings
from worker.sweeper import sweep as sweep_sessions


@app.task(bind=True, name="worker.tasks.summarize_session", acks_late=True,
          reject_on_worker_lost=True)
def summarize_session(self: Any, session_id: str) -> dict[str, object]:
    """Fold the oldest messages of ``session_id`` into its rolling summary."""
    settings = get_settings()
    retries = self.request.retries
    job = service.Job(task_id=self.request.id, attempt=retries + 1,
                      final_attempt=retries >= settings.max_retries)
    if not isinstance(session_id, str):
        session_id = repr(session_id)  # recorded as "not found", never raises a loop
    try:
        outcome = service.summarize(session_id, job=job, summarizer=get_summarizer(),
                                    settings=settings)
    except Exception as exc:
        if service.is_transient(exc) and not job.final_attempt:
            after = exc.retry_after if isinstance(exc, TransientLLMError) else None
            delay = retry_delay(retries, retry_after=after, base=settings.retry_backoff_s,
                                cap=settings.retry_backoff_max_s, rand=random.random())
            raise self.retry(exc=exc, countdown=delay,
                             max_retries=settings.max_retries) from exc
        self.send_event("summarization-failed", session_id=session_id,
                        error_class=type(exc).__name__)
        raise
    if outcome.status == "applied":
        self.send_event("summarization-complete", session_id=session_id,
                        turns_condensed=outcome.messages_condensed,
                        summary_tokens=outcome.summary_tokens)
    if outcome.more_work:
        send(session_id)  # the follow-up; its pending marker was set with the apply
    return outcome.as_dict()


@app.task(name="worker.tasks.sweep", acks_late=True)
def sweep() -> int:
    """Queue every session that needs work and has no live lease or pending job."""
    return sweep_sessions(get_settings())
