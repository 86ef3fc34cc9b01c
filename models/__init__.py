"""Recap's tables. Declarative models only: no engine, no session, no settings."""

from models.base import Base
from models.tables import ROLES, RUN_STATUSES, ChatMessage, ChatSession, SummaryRun

__all__ = ["Base", "ChatMessage", "ChatSession", "SummaryRun", "ROLES", "RUN_STATUSES"]
