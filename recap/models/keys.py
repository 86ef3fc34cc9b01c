"""``stored_keys``: which framework items a session already holds, so a retried
step stores nothing twice (recap.api.turns)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Index, String, func
from sqlalchemy.orm import Mapped, mapped_column

from recap.models.base import Base


class StoredKey(Base):
    """One framework id (a LangChain message id, an Agents SDK item id, a pydantic-ai
    run position) stored in a session. No FK to chat_sessions: the key is claimed
    before the message creates the session; ``recap.forget`` erases the rows.
    Rows outlive the message they name (a fold deletes it), which is the point: a
    step retried after a fold still finds its key."""

    __tablename__ = "stored_keys"

    session_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    # The chat_messages id the item went into (several items may share one).
    message_id: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True),
                                                 server_default=func.now())

    __table_args__ = (Index("ix_stored_keys_session_id_message_id", "session_id",
                            "message_id"),)
