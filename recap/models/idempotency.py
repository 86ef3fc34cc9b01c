"""Idempotency keys of the HTTP API: the first answer to a request, kept so that a
retry with the same key gets it again instead of storing the messages twice."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from recap.models.base import Base


class IdempotencyKey(Base):
    """One ``Idempotency-Key`` and the answer its request got (written in the same
    transaction as the messages, so a stored key always means stored messages)."""

    __tablename__ = "idempotency_keys"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    # sha256 of the session id and the canonical request body: the same key with
    # another body is refused, not answered with the first body's reply.
    fingerprint: Mapped[str] = mapped_column(String(64), nullable=False)
    # The session the answer stored messages in: forgetting the session erases the
    # answer with it (NULL only on rows written before the column existed).
    session_id: Mapped[str | None] = mapped_column(String(255))
    status: Mapped[int] = mapped_column(Integer, nullable=False)
    response: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)

    __table_args__ = (
        # The purge of expired keys.
        Index("ix_idempotency_keys_expires_at", "expires_at"),
        # recap.forget's delete.
        Index("ix_idempotency_keys_session_id", "session_id"),
    )
