"""Recap: a Celery worker that keeps a rolling summary of long chat sessions.

``celery -A worker worker`` finds the app here.
"""

from worker.celery_app import app

celery = app

__all__ = ["app", "celery"]
