"""The Celery app. Configuration comes from Settings; workers, beat, Flower and
the enqueuing app all build it here, so they share one visibility timeout."""

from __future__ import annotations

import sys
from typing import Any

from celery import Celery
from celery.signals import worker_init, worker_process_init

from worker import tracing
from worker.settings import Settings, get_settings


def broker_transport_options(settings: Settings) -> dict[str, Any]:
    if settings.celery_broker_url.startswith(("sqla+", "sqlalchemy+")):
        # kombu's SQLAlchemy transport hands every option to create_engine(), and
        # has no visibility timeout to size (a lost job waits for the sweeper).
        return {}
    return {"visibility_timeout": settings.visibility_timeout_s,
            # The hook publishes on the chat app's reply path: fail fast.
            "socket_connect_timeout": 3}


def celery_config(settings: Settings) -> dict[str, Any]:
    return {
        "broker_url": settings.celery_broker_url,
        "broker_connection_retry_on_startup": True,
        # Redis redelivers an unacked message after visibility_timeout, even to a
        # live worker: it must outlive the hard time limit plus the longest
        # retry delay (checked in Settings).
        "broker_transport_options": broker_transport_options(settings),
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_soft_time_limit": settings.task_soft_time_limit_s,
        "task_time_limit": settings.task_time_limit_s,
        "task_serializer": "json",
        "accept_content": ["json"],
        # Outcomes live in summary_runs; no result backend to leak or fill up.
        "task_ignore_result": True,
        "task_default_queue": settings.queue,
        "task_routes": {"worker.tasks.*": {"queue": settings.queue}},
        # Flower sees every job, its args, state and retries.
        "worker_send_task_events": True,
        "task_send_sent_event": True,
        "beat_schedule": {
            "recap-sweep": {"task": "worker.tasks.sweep", "schedule": settings.sweep_interval_s},
        },
        "timezone": "UTC",
    }


app = Celery("recap", include=["worker.tasks"])
app.conf.update(celery_config(get_settings()))
# Publishers (the chat app, beat) and the worker's main process; no-op when off.
tracing.configure_provider()
tracing.instrument_celery()


@worker_init.connect
def _validate_at_start(**_: Any) -> None:
    # Fail the worker at start-up (bad prompt file, offline in production, no
    # tokenizer) rather than on its first job.
    from worker.errors import ConfigError
    from worker.runtime import get_summarizer
    from worker.tokens import count_tokens

    try:
        get_summarizer()
        count_tokens("warm up")
    except ConfigError as exc:
        # Celery only logs exceptions raised by signal handlers; exit for real.
        print(f"recap: error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None


@worker_process_init.connect
def _after_fork(**_: Any) -> None:
    # Pooled connections and the HTTP client must not be shared across fork.
    from worker import runtime
    from worker.db import reset_engines

    reset_engines(close=False)
    runtime.reset()
    tracing.configure_provider()  # no-op if inherited: the SDK is fork-safe
    tracing.instrument_celery()
