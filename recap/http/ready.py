"""What ``/readyz`` checks: the database answers and is at the migration head
(:func:`recap.migrate.schema_problem`, as every entry point checks it), and the
broker accepts a connection. Each check returns a problem (one line) or None."""

from __future__ import annotations

from recap.migrate import schema_problem

__all__ = ["BROKER_TIMEOUT_S", "broker_problem", "database_problem", "schema_problem"]

# Seconds a readiness probe may wait for the broker: probes run every few seconds.
BROKER_TIMEOUT_S = 3.0


def database_problem() -> str | None:
    """None if the configured database is reachable and at the migration head, else
    the one line that says why and how to fix it."""
    from recap.db import get_engine
    from recap.errors import DatabaseNotReady

    try:
        engine = get_engine()  # its first build makes the same check (recap.db)
    except DatabaseNotReady as exc:
        return str(exc)
    return schema_problem(engine)  # checked again on each probe: it may go down later


def broker_problem() -> str | None:
    """None if the broker (CELERY_BROKER_URL) accepts a connection, else why not."""
    from recap.worker.celery_app import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0,
                                   timeout=BROKER_TIMEOUT_S)
    except Exception as exc:
        detail = (str(exc).splitlines() or [""])[0]
        return f"broker unreachable: {type(exc).__name__}: {detail}"
    return None
