"""What ``/readyz`` checks: the database answers and is at the migration head, and
the broker accepts a connection. Each check returns a problem (one line) or None."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, inspect

from models import Base

# Seconds a readiness probe may wait for the broker: probes run every few seconds.
BROKER_TIMEOUT_S = 3.0
MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"


def schema_problem(engine: Engine) -> str | None:
    """None if the database at ``engine`` is at the newest migration, else why not.

    The newest migration is read from the repository's migrations/ (the Docker
    image and an editable install have it); without it, only that every table
    of the models exists."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    try:
        with engine.connect() as conn:
            current = set(MigrationContext.configure(conn).get_current_heads())
            tables = set(inspect(conn).get_table_names())
    except Exception as exc:
        first = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        return f"database unreachable: {first}"
    if not (MIGRATIONS / "env.py").is_file():
        # Installed without the repository's migrations/: the tables the code uses
        # must exist at least.
        missing = sorted(set(Base.metadata.tables) - tables)
        if missing:
            return (f"database lacks tables {', '.join(missing)} (not migrated): "
                    "run alembic upgrade head")
        return None
    heads = set(ScriptDirectory(str(MIGRATIONS)).get_heads())
    if current != heads:
        now = ", ".join(sorted(current)) or "none (not migrated)"
        return (f"database at migration {now}, the code needs {', '.join(sorted(heads))}: "
                "run alembic upgrade head")
    return None


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
