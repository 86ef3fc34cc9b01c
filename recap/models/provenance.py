"""Where each memory came from (recap.models.Memory): one row per batch that stated it."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    String,
    Table,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from recap.models.base import Base, BigId

# Who stated a memory's text. ``user``: the user, in their own words (the only
# kind that goes to the user's scope and crosses sessions); ``assistant``,
# ``tool``, ``document``: the assistant's turns, tool results, attached or pasted
# documents; ``unverified``: the model said the user stated it, but Recap did not
# find it in the user's own words; ``guard``: written by the retention guard's
# fallback; ``legacy``: stored before provenance was recorded.
SOURCE_KINDS = ("user", "assistant", "tool", "document", "unverified", "guard", "legacy")


class MemorySource(Base):
    """One source of a memory: the session and batch (message ids, run) that stated
    it, and who in that batch did. A memory stated in several sessions has a row
    for each, and goes only when its last source goes (forget, rewind, edit)."""

    __tablename__ = "memory_sources"

    id: Mapped[int] = mapped_column(BigId, Identity(), primary_key=True)
    memory_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("memories.id", ondelete="CASCADE"), nullable=False)
    session_id: Mapped[str] = mapped_column(
        String(255), ForeignKey("chat_sessions.id", ondelete="CASCADE"), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    first_message_id: Mapped[int | None] = mapped_column(BigInteger)
    last_message_id: Mapped[int | None] = mapped_column(BigInteger)
    # The summary_runs row of the job that wrote it (NULL for legacy rows).
    run_id: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True),
                                                 server_default=func.now())

    __table_args__ = (
        Index("ix_memory_sources_memory_id", "memory_id"),
        Index("ix_memory_sources_session_id_last_message_id", "session_id", "last_message_id"),
        CheckConstraint("kind IN ('user', 'assistant', 'tool', 'document', 'unverified', "
                        "'guard', 'legacy')", name="kind"),
        {"sqlite_autoincrement": True},
    )


sources_table = cast(Table, MemorySource.__table__)
