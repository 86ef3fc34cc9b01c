"""What ``/readyz`` checks: the database answers and is at the migration head
(:func:`worker.migrate.schema_problem`, as every entry point checks it), and the
broker accepts a connection. Each check returns a problem (one line) or None."""

from __future__ import annotations

from worker.migrate import schema_problem

__all__ = ["BROKER_TIMEOUT_S", "broker_problem", "schema_problem"]

# Seconds a readiness probe may wait for the broker: probes run every few seconds.
BROKER_TIMEOUT_S = 3.0


def broker_problem() -> str | None:
    """None if the broker (CELERY_BROKER_URL) accepts a connection, else why not."""
    from worker.celery_app import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0,
                                   timeout=BROKER_TIMEOUT_S)
    except Exception as exc:
        detail = (str(exc).splitlines() or [""])[0]
        return f"broker unreachable: {type(exc).__name__}: {detail}"
    return None
