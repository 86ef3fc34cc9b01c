"""Recap: a Celery worker that keeps a rolling summary of long chat sessions.

``celery -A worker worker`` finds the app here. It is built on first access, so
importing ``worker.ingest`` or running ``recap --help`` does not read settings.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name in ("app", "celery"):
        from worker.celery_app import app

        return app
    raise AttributeError(f"module 'worker' has no attribute {name!r}")
