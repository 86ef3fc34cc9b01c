"""Recap's tables. Declarative models only: no engine, no session, no settings."""

from models.base import Base
from models.provenance import SOURCE_KINDS, MemorySource, sources_table
from models.tables import (
    MEMORY_CATEGORIES,
    ROLES,
    ArchivedMessage,
    ChatMessage,
    ChatSession,
    Heartbeat,
    Memory,
    SummaryRun,
    SummaryVersion,
    TitleRun,
    messages_table,
    runs_table,
    sessions_table,
    versions_table,
)

__all__ = ["Base", "ArchivedMessage", "ChatMessage", "ChatSession", "Heartbeat", "Memory",
           "SummaryRun", "SummaryVersion", "TitleRun", "MEMORY_CATEGORIES", "ROLES",
           "messages_table", "runs_table", "sessions_table", "versions_table",
           "MemorySource", "SOURCE_KINDS", "sources_table"]
