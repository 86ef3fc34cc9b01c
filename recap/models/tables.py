from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from recap.models.base import Base, BigId

ROLES = ("user", "assistant", "system", "tool")
MEMORY_CATEGORIES = ("preference", "personal", "work", "plan", "fact", "other")

Timestamp = DateTime(timezone=True)
# A message's Messages API content array (recap.core.content.blocks), NULL for a plain
# string message (``content`` is then the message). JSONB on PostgreSQL.
Blocks = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")


class ChatSession(Base):
    """One conversation of the chat app, named by the app's own id."""

    __tablename__ = "chat_sessions"

    id: Mapped[str] = mapped_column(String(255), primary_key=True)
    # The app's user, when it names one: memories are then the user's (shared by
    # all their sessions) instead of this session's. Set once (recap.api.ingest).
    user_id: Mapped[str | None] = mapped_column(String(255))
    rolling_summary: Mapped[str | None] = mapped_column(Text)
    # Token estimate of rolling_summary, so the hook and the sweeper can judge
    # context usage from counters alone.
    summary_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    summary_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    summarized_message_count: Mapped[int] = mapped_column(BigInteger, default=0,
                                                          server_default="0")
    message_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    active_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    title: Mapped[str | None] = mapped_column(Text)
    # Set while a title job is queued or after it failed (the sweeper retries later).
    title_requested_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # Per-session tuning (recap.settings.Tuning fields), validated on write.
    overrides: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    needs_escalation: Mapped[bool] = mapped_column(Boolean, default=False,
                                                   server_default="false")
    # Set by a job whose plan found the normal rule unable to fire before the next
    # summary (recap.policy.Plan.normal_blocked); the hook and the sweeper then
    # queue only on context usage. Cleared by every applied summary.
    normal_blocked: Mapped[bool] = mapped_column(Boolean, default=False,
                                                 server_default="false")
    # The thresholds normal_blocked was computed under (Settings.thresholds_key()):
    # the flag holds only while they are still the session's thresholds, so a
    # change of settings or overrides re-opens the normal rule at once.
    normal_blocked_under: Mapped[str | None] = mapped_column(String(120))
    # The claim: a job owns the session while lease_token is set and unexpired.
    lease_token: Mapped[str | None] = mapped_column(String(36))
    lease_expires_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # Claims in a row that found a dead holder's expired lease; reset on success.
    lost_leases: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Set while a summarize job is queued and not yet started (coalescing).
    enqueued_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # Set when a run is dead-lettered: the sweeper leaves the session alone until then.
    blocked_until: Mapped[datetime | None] = mapped_column(Timestamp)
    # No-op runs in a row on an unchanged context (summary + active tokens, kept in
    # noop_context_tokens): the sweeper leaves the session alone until
    # noop_backoff_until, a period that doubles with each (recap.worker.jobs.claim).
    noop_runs: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    noop_backoff_until: Mapped[datetime | None] = mapped_column(Timestamp)
    noop_context_tokens: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now(),
                                                 onupdate=func.now())
    summary_updated_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # What the replies cost next to full history with caching (recap.core.spend):
    # sums kept by SQL increments on the reply path (recap.api.spend) and by each
    # recorded run (the summarizer's API tokens), counted from spend_since (NULL:
    # since created_at; set for the sessions older than migration 0024).
    history_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    spend_since: Mapped[datetime | None] = mapped_column(Timestamp)
    spend_replies: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    spend_recap_read: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    spend_recap_write: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    spend_recap_uncached: Mapped[int] = mapped_column(BigInteger, default=0,
                                                      server_default="0")
    spend_summarize_input: Mapped[int] = mapped_column(BigInteger, default=0,
                                                       server_default="0")
    spend_summarize_output: Mapped[int] = mapped_column(BigInteger, default=0,
                                                        server_default="0")
    spend_full_read: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    spend_full_write: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    spend_full_uncached: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # The last reply's two requests (tokens), summary version and time: the next
    # reply's cached prefix.
    spend_prefix_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    spend_prefix_history: Mapped[int] = mapped_column(BigInteger, default=0,
                                                      server_default="0")
    spend_prefix_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    spend_prefix_at: Mapped[datetime | None] = mapped_column(Timestamp)

    __table_args__ = (
        # The sweeper's two ways in: the normal trigger and context usage.
        Index("ix_chat_sessions_active_tokens", "active_tokens"),
        # A user's sessions (recap.forget, memories' scope).
        Index("ix_chat_sessions_user_id", "user_id"),
        Index("ix_chat_sessions_context_tokens", "summary_tokens", "active_tokens"),
        # The title sweep: untitled sessions only.
        Index("ix_chat_sessions_untitled", "title_requested_at",
              postgresql_where=text("title IS NULL"), sqlite_where=text("title IS NULL")),
        # Sessions with their own overrides, paged by id (the sweeper, recap metrics).
        Index("ix_chat_sessions_overridden", "id",
              postgresql_where=text("overrides IS NOT NULL"),
              sqlite_where=text("overrides IS NOT NULL")),
    )


class ChatMessage(Base):
    """One message still in the active window of its session."""

    __tablename__ = "chat_messages"

    id: Mapped[int] = mapped_column(BigId, Identity(), primary_key=True)
    session_id: Mapped[str] = mapped_column(
        String(255), ForeignKey("chat_sessions.id", ondelete="CASCADE"), nullable=False)
    role: Mapped[str] = mapped_column(String(16), nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    token_count: Mapped[int] = mapped_column(Integer, nullable=False)
    pinned: Mapped[bool] = mapped_column(Boolean, default=False, server_default="false")
    created_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())
    # The content array as the app gave it; ``content`` is then its rendering
    # (recap.core.content.render), used for token counts, summaries and search.
    blocks: Mapped[list[dict[str, Any]] | None] = mapped_column(Blocks)
    # "call:ID result:ID ...": the tool ids of ``blocks``, so the policy's unit
    # rule reads them without loading the blocks (recap.core.content.render.links_text).
    tool_links: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        Index("ix_chat_messages_session_id_id", "session_id", "id"),
        CheckConstraint("role IN ('user', 'assistant', 'system', 'tool')", name="role"),
        CheckConstraint("token_count >= 0", name="token_count"),
        # AUTOINCREMENT: SQLite must never reuse the id of a deleted message.
        {"sqlite_autoincrement": True},
    )


class Memory(Base):
    """A durable fact about the user, mined from a batch before it was condensed.

    ``scope`` says whose it is: ``u:<user_id>`` when the session names a user
    (shared by all the user's sessions), else ``s:<session_id>``. ``session_id``
    and the message range are its provenance (the first session that said it);
    deleting that session (recap.forget) deletes the memory. A memory the model
    marked as replaced keeps its row with ``superseded_by`` (audit) and is never
    shown in a context.
    """

    __tablename__ = "memories"

    id: Mapped[int] = mapped_column(BigId, Identity(), primary_key=True)
    session_id: Mapped[str] = mapped_column(
        String(255), ForeignKey("chat_sessions.id", ondelete="CASCADE"), nullable=False)
    scope: Mapped[str] = mapped_column(String(257), nullable=False)
    fact: Mapped[str] = mapped_column(Text, nullable=False)
    # sha256 of the fact: exact duplicates within a scope are stored once.
    fact_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    category: Mapped[str] = mapped_column(String(32), nullable=False)
    importance: Mapped[int] = mapped_column(Integer, nullable=False)
    first_message_id: Mapped[int | None] = mapped_column(BigInteger)
    last_message_id: Mapped[int | None] = mapped_column(BigInteger)
    # The memory that replaced this one (same scope); NULL while it is live.
    superseded_by: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())

    __table_args__ = (
        UniqueConstraint("scope", "fact_hash"),
        # Provenance lookups (recap.forget of one session).
        Index("ix_memories_session_id", "session_id"),
        CheckConstraint("importance BETWEEN 1 AND 5", name="importance"),
        CheckConstraint("category IN ('preference', 'personal', 'work', 'plan', 'fact', "
                        "'other')", name="category"),
        {"sqlite_autoincrement": True},
    )


class ArchivedMessage(Base):
    """A condensed message kept (RECAP_ARCHIVE_SUMMARIZED) instead of deleted."""

    __tablename__ = "archived_messages"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    session_id: Mapped[str] = mapped_column(
        String(255), ForeignKey("chat_sessions.id", ondelete="CASCADE"), nullable=False)
    role: Mapped[str] = mapped_column(String(16), nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    token_count: Mapped[int] = mapped_column(Integer, nullable=False)
    pinned: Mapped[bool] = mapped_column(Boolean, default=False, server_default="false")
    created_at: Mapped[datetime] = mapped_column(Timestamp, nullable=False)
    # The summary_runs row that condensed it.
    run_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    archived_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())
    blocks: Mapped[list[dict[str, Any]] | None] = mapped_column(Blocks)
    tool_links: Mapped[str | None] = mapped_column(Text)
    # What recall searches when ``content`` is not the whole message: the full
    # rendering of a content array (``content`` cuts long tool results). Searched
    # through ix_archived_messages_search (PostgreSQL) or archived_messages_fts
    # (SQLite), built by the migrations only (see SEARCH_OBJECTS).
    search_text: Mapped[str | None] = mapped_column(Text)
    # What ix_archived_messages_search reads instead when the message is too long
    # for a tsvector (PostgreSQL): its distinct words, bounded (recap.store.search).
    search_terms: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        Index("ix_archived_messages_session_id_id", "session_id", "id"),
        # The retention sweep's oldest-first batches (RECAP_ARCHIVE_RETENTION_DAYS).
        Index("ix_archived_messages_archived_at", "archived_at"),
    )


class SummaryVersion(Base):
    """The summary one applied run produced (``recap history``, ``recap.summary_at``,
    ``rewind``); kept per RECAP_SUMMARY_VERSIONS_KEEP."""

    __tablename__ = "summary_versions"

    session_id: Mapped[str] = mapped_column(
        String(255), ForeignKey("chat_sessions.id", ondelete="CASCADE"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    text: Mapped[str] = mapped_column(Text, nullable=False)
    tokens: Mapped[int] = mapped_column(Integer, nullable=False)
    # The newest message id the summary covers (every condensed id is <= it);
    # NULL when unknown (a version recorded by the migration without runs).
    covers_through: Mapped[int | None] = mapped_column(BigInteger)
    run_id: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())


# Core tables, for statements on hot paths: they skip the ORM's statement layer.
sessions_table = cast(Table, ChatSession.__table__)
messages_table = cast(Table, ChatMessage.__table__)
versions_table = cast(Table, SummaryVersion.__table__)
