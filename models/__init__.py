"""Recap's tables. Declarative models only: no engine, no session, no settings."""

import importlib.util as _util
from pathlib import Path as _Path


def _refuse_a_foreign_worker() -> None:
    # Recap's package is `worker`; an app's own worker.py (or worker/) earlier on
    # sys.path hides it, and every Recap import after this one would fail. The same
    # check as worker/__init__.py makes for `models`, from this side.
    ours = _Path(__file__).resolve().parent.parent / "worker"
    try:
        spec = _util.find_spec("worker")
    except (ImportError, ValueError):
        return
    if spec is None:
        return
    places = [_Path(p).resolve() for p in spec.submodule_search_locations or ()]
    if ours in places:
        return
    theirs = spec.origin or (", ".join(map(str, places)) or "an unknown location")
    raise ImportError(
        f"Recap cannot load its package 'worker' ({ours}): the name resolves to {theirs}, "
        "another module of that name earlier on sys.path (your application's own?). "
        "Either rename that module (e.g. app_worker), or run Recap as a separate "
        "service and talk to it over HTTP (`recap serve`).", name="worker", path=theirs)


_refuse_a_foreign_worker()

from models.audit import Heartbeat, SummaryRun, TitleRun, runs_table  # noqa: E402 (after the check)
from models.base import Base  # noqa: E402
from models.idempotency import IdempotencyKey  # noqa: E402
from models.keys import StoredKey  # noqa: E402
from models.provenance import SOURCE_KINDS, MemorySource, sources_table  # noqa: E402
from models.tables import (  # noqa: E402
    MEMORY_CATEGORIES,
    ROLES,
    ArchivedMessage,
    ChatMessage,
    ChatSession,
    Memory,
    SummaryVersion,
    messages_table,
    sessions_table,
    versions_table,
)

__all__ = ["Base", "ArchivedMessage", "ChatMessage", "ChatSession", "Heartbeat",
           "IdempotencyKey", "Memory", "StoredKey", "SummaryRun", "SummaryVersion", "TitleRun",
           "MEMORY_CATEGORIES", "ROLES",
           "messages_table", "runs_table", "sessions_table", "versions_table",
           "MemorySource", "SOURCE_KINDS", "sources_table"]
