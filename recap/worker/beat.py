"""Celery beat's side of Recap: a schedule file in a writable default place, and a
refusal to start against a database that is unreachable or not migrated.

``celery -A recap beat`` uses :class:`Scheduler` (set in recap.worker.celery_app); its
schedule defaults to the user's data directory (recap/paths.py) instead of the
current one, which in a container image is often read-only.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from celery.beat import PersistentScheduler
from celery.signals import beat_init


def _refuse(message: str) -> None:
    # Celery only logs exceptions raised where beat starts; exit for real, one line,
    # on the real stderr (beat has redirected sys.stderr into its log by now).
    print(f"recap: error: {message}", file=sys.__stderr__ or sys.stderr, flush=True)
    raise SystemExit(1)


class Scheduler(PersistentScheduler):
    """Celery's file-backed scheduler, creating the schedule file's folder first."""

    def setup_schedule(self) -> None:
        folder = Path(self.schedule_filename).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            _refuse(f"beat cannot create {folder} for its schedule file ({exc.strerror}): "
                    "pass --schedule PATH in a directory it may write")
        super().setup_schedule()


@beat_init.connect
def _check_database(**_: Any) -> None:
    # The sweep reads the database: a beat that cannot reach it would only queue
    # nothing, every interval, without saying why.
    from recap.errors import ConfigError

    try:
        from recap.db import get_engine

        get_engine()
    except ConfigError as exc:
        _refuse(str(exc))
