"""Recap: a Celery worker that keeps a rolling summary of long chat sessions.

The chat app's API, in one place (everything else is internal)::

    from worker import add_message, after_reply, build_context, as_request
    from worker import configure_session, forget, errors
    from worker import forget_memories  # drop memories by who stated them
    from worker import rewind, edit_message, summary_at   # edit, regenerate, history

``celery -A worker worker`` finds the Celery app here as ``worker.app``.
Names load on first access, so ``import worker`` (and ``recap --help``) reads
no settings and loads neither SQLAlchemy nor Celery until they are used.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any


def _refuse_a_foreign_models() -> None:
    # Recap's code imports its tables as the top-level package `models`; an app's
    # own models.py (or models/) earlier on sys.path would be imported instead and
    # fail deep inside Recap. Found without importing it, so this costs a lookup.
    ours = Path(__file__).resolve().parent.parent / "models"
    try:
        spec = importlib.util.find_spec("models")
    except (ImportError, ValueError):
        return
    if spec is None:
        return  # a broken install: the import itself will say so
    places = [Path(p).resolve() for p in spec.submodule_search_locations or ()]
    if ours in places:
        return
    theirs = spec.origin or (", ".join(map(str, places)) or "an unknown location")
    raise ImportError(
        f"Recap cannot load its package 'models' ({ours}): the name resolves to {theirs}, "
        "another module of that name earlier on sys.path (your application's own?). "
        "Either rename that module (e.g. app_models), or run Recap as a separate "
        "service and talk to it over HTTP (`recap serve`).", name="models", path=theirs)


_refuse_a_foreign_models()

if TYPE_CHECKING:
    from celery import Celery

    from worker import errors
    from worker.api.context import as_request, build_context
    from worker.api.ingest import add_message, after_reply
    from worker.sessions.edit import edit_message
    from worker.sessions.forget import forget, forget_memories
    from worker.sessions.history import summary_at
    from worker.sessions.overrides import configure_session
    from worker.sessions.rewind import rewind

    app: Celery
    celery: Celery

__all__ = ["add_message", "after_reply", "as_request", "build_context", "configure_session",
           "edit_message", "errors", "forget", "forget_memories", "rewind", "summary_at"]

_PUBLIC = {
    "add_message": "worker.api.ingest",
    "after_reply": "worker.api.ingest",
    "build_context": "worker.api.context",
    "as_request": "worker.api.context",
    "configure_session": "worker.sessions.overrides",
    "forget": "worker.sessions.forget",
    "forget_memories": "worker.sessions.forget",
    "summary_at": "worker.sessions.history",
    # Not on the reply path: one transaction under the session's lease.
    "rewind": "worker.sessions.rewind",
    "edit_message": "worker.sessions.edit",
    # For `celery -A worker`: the app, not part of the chat app's API.
    "app": "worker.celery_app",
    "celery": "worker.celery_app",
}


def __getattr__(name: str) -> Any:
    if name == "errors":
        return importlib.import_module("worker.errors")
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'worker' has no attribute {name!r}")
    attr = "app" if name == "celery" else name
    return getattr(importlib.import_module(module), attr)
