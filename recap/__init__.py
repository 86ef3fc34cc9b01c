"""Recap: a Celery worker that keeps a rolling summary of long chat sessions.

The chat app's API, in one place::

    from recap import add_message, after_reply, build_context, as_request
    from recap import configure_session, forget, forget_memories
    from recap import rewind, edit_message, summary_at   # edit, regenerate, history
    from recap import session    # the session as a whole: summary, last fold, memories
    from recap import recall     # an agent's tool: a cleared output or archived passage back
    from recap import recall_tool_definition, recall_tool  # that tool for the Messages API
    from recap import warm_up    # at start-up: the first reply as fast as later ones
    from recap import tenant     # scope calls to one tenant's ids (docs/SECURITY.md)
    from recap import aio        # the same calls as coroutines
    from recap import errors     # what they raise
    import recap.testing         # the Messages API stand-in, for your tests
    import recap.integrations.langchain  # or .openai_agents, .pydantic_ai

Every other module under ``recap`` is internal and may change between releases.
``recap worker`` and ``recap beat`` start Celery on Recap's app, which is also
``recap.app`` for ``celery -A recap ...``. Names load on first access, so
``import recap`` (and ``recap --help``) reads no settings and loads neither
SQLAlchemy nor Celery until they are used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celery import Celery

    from recap import aio, errors
    from recap.api.context import as_request, build_context
    from recap.api.ingest import add_message, after_reply
    from recap.api.recall import recall
    from recap.api.recall_tool import recall_tool, recall_tool_definition
    from recap.api.warm import warm_up
    from recap.core.tenant import tenant
    from recap.sessions.edit import edit_message
    from recap.sessions.forget import forget, forget_memories
    from recap.sessions.history import summary_at
    from recap.sessions.overrides import configure_session
    from recap.sessions.rewind import rewind
    from recap.sessions.view import SessionView, session

    app: Celery
    celery: Celery

__all__ = ["SessionView", "add_message", "after_reply", "aio", "as_request", "build_context",
           "configure_session", "edit_message", "errors", "forget", "forget_memories", "recall",
           "recall_tool", "recall_tool_definition", "rewind", "session", "summary_at", "tenant",
           "warm_up"]

# Public submodules, loaded on first access like the functions.
_SUBMODULES = ("aio", "errors", "testing", "integrations")

_PUBLIC = {
    "add_message": "recap.api.ingest",
    "after_reply": "recap.api.ingest",
    "build_context": "recap.api.context",
    "as_request": "recap.api.context",
    "warm_up": "recap.api.warm",
    "recall": "recap.api.recall",
    "recall_tool": "recap.api.recall_tool",
    "recall_tool_definition": "recap.api.recall_tool",
    "configure_session": "recap.sessions.overrides",
    "forget": "recap.sessions.forget",
    "forget_memories": "recap.sessions.forget",
    "summary_at": "recap.sessions.history",
    "session": "recap.sessions.view",
    "SessionView": "recap.sessions.view",
    # Not on the reply path: one transaction under the session's lease.
    "rewind": "recap.sessions.rewind",
    "edit_message": "recap.sessions.edit",
    "tenant": "recap.core.tenant",
    # For `celery -A recap`: the app, not part of the chat app's API.
    "app": "recap.worker.celery_app",
    "celery": "recap.worker.celery_app",
}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"recap.{name}")
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'recap' has no attribute {name!r}")
    attr = "app" if name == "celery" else name
    return getattr(importlib.import_module(module), attr)
