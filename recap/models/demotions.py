"""What the verbatim rule demoted when it was introduced (migration 0021), so a
downgrade can put it back: one row per memory source it relabelled."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from recap.models.base import Base


class MemoryDemotion(Base):
    """A source of a user-scoped memory whose text the upgrade could not find, word
    for word, in what the user typed in its batch (recap.core.memories.verbatim): the
    source became ``unverified`` and the memory moved to its first session's scope
    (or, when that scope already held the same fact, was superseded by that row).
    ``kind``, ``scope`` and ``superseded`` are what a downgrade restores."""

    __tablename__ = "memory_demotions"

    source_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("memory_sources.id", ondelete="CASCADE"), primary_key=True,
        autoincrement=False)
    memory_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("memories.id", ondelete="CASCADE"), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)  # the source's kind before
    scope: Mapped[str] = mapped_column(String(257), nullable=False)  # the memory's scope before
    # Whether the upgrade superseded the memory instead of moving it.
    superseded: Mapped[bool] = mapped_column(Boolean, nullable=False)
