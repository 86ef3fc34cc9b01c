"""The Celery app. Workers, beat, Flower and every publisher build it here, so they
share one configuration (and one visibility timeout).

Configuration is lazy: settings are read when the app is first configured (its
first publish, or a worker or beat starting), never at import. Tasks live in
``recap.worker.tasks`` (loaded by the worker through ``include``); publishers send by
name and never import them.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

from recap import tracing
from recap.paths import default_beat_schedule
from recap.settings import Settings, get_settings

# Alembic logs one INFO line per built-in autogenerate plugin ("setup plugin
# alembic.autogenerate.*") when first imported, which a worker, beat or Flower does
# (recap.migrate checks the schema) after Celery has set logging up at INFO: eight
# lines about nothing an operator acts on. Its warnings still show.
logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)


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
        "task_routes": {"recap.tasks.*": {"queue": settings.queue}},
        # Flower sees every job, its args, state and retries.
        "worker_send_task_events": True,
        "task_send_sent_event": True,
        "beat_schedule": {
            "recap-sweep": {"task": "recap.tasks.sweep", "schedule": settings.sweep_interval_s},
        },
        "timezone": "UTC",
        # Beat's schedule is scratch, kept in the user's data directory by default
        # (recap.worker.beat creates the folder; --schedule overrides the file).
        "beat_scheduler": "recap.worker.beat:Scheduler",
        "beat_schedule_filename": str(default_beat_schedule()),
    }


# kombu's Redis transport with the fix that lets a worker survive a Redis restart
# mid-job (see recap.broker). An alias keeps the redis:// and rediss:// schemes.
TRANSPORT_ALIASES["redis"] = TRANSPORT_ALIASES["rediss"] = "recap.broker:Transport"

app = Celery("recap", include=["recap.worker.tasks"])
# A promise: evaluated when the configuration is first needed, not at import.
app.add_defaults(lambda: celery_config(get_settings()))


def reconfigure(settings: Settings) -> None:
    """Point the already-configured app at ``settings`` (the demo's own files)."""
    app.conf.update(celery_config(settings))


@app.on_after_configure.connect
def _set_up_tracing(sender: Celery, **_: Any) -> None:
    # Publishers (the chat app, beat) and the worker's main process; no-op when off.
    tracing.configure(enabled=get_settings().otel_enabled)
    tracing.configure_provider()
    tracing.instrument_celery()
