"""Recap's tables. Declarative models only: no engine, no session, no settings."""

from recap.models.audit import Heartbeat, SummaryRun, TitleRun, runs_table
from recap.models.base import SEARCH_OBJECTS, Base, modelled
from recap.models.demotions import MemoryDemotion
from recap.models.idempotency import IdempotencyKey
from recap.models.keys import StoredKey
from recap.models.provenance import SOURCE_KINDS, MemorySource, sources_table
from recap.models.tables import (
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
           "MemoryDemotion", "MemorySource", "SOURCE_KINDS", "sources_table", "SEARCH_OBJECTS",
           "modelled"]
