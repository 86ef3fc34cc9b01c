"""The audit tables: one row per summarize outcome, per title call, per worker
heartbeat. No foreign keys: the audit outlives the sessions it names."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Identity,
    Index,
    Integer,
    String,
    Table,
    Text,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from recap.models.base import Base, BigId
from recap.models.tables import Timestamp


class SummaryRun(Base):
    """The audit row of one summarize job outcome. No FK: audit outlives sessions."""

    __tablename__ = "summary_runs"

    id: Mapped[int] = mapped_column(BigId, Identity(), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(255), nullable=False)
    task_id: Mapped[str | None] = mapped_column(String(255))
    attempt: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    reason: Mapped[str | None] = mapped_column(Text)
    messages_condensed: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Tokens of the condensed messages (their stored token_count), for "tokens saved".
    condensed_tokens: Mapped[int | None] = mapped_column(BigInteger)
    first_message_id: Mapped[int | None] = mapped_column(BigInteger)
    last_message_id: Mapped[int | None] = mapped_column(BigInteger)
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    # Recap's tiktoken estimate of the same requests' input (input_tokens is the
    # API's count): their ratio says what Recap's token budgets mean to the API.
    estimated_input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    summary_tokens: Mapped[int | None] = mapped_column(Integer)
    latency_ms: Mapped[int | None] = mapped_column(Integer)
    model: Mapped[str | None] = mapped_column(String(100))
    error: Mapped[str | None] = mapped_column(Text)
    # Which policy rule made the run's plan (recap.core.planning.policy.Mode) on a job's
    # run; NULL on a rewind's, a resummarize's and runs recorded before it existed.
    mode: Mapped[str | None] = mapped_column(String(16))
    # The retention guard (recap/core/retention/guard.py) on an applied run: specifics of the
    # batch as claimed and of the previous summary; missing before and after the one
    # repair call; settled in the details section or as memories; batch messages
    # left in the window (they follow the condensed prefix, outside first..last).
    specifics_total: Mapped[int | None] = mapped_column(Integer)
    specifics_missing_before_repair: Mapped[int | None] = mapped_column(Integer)
    specifics_missing_after: Mapped[int | None] = mapped_column(Integer)
    specifics_in_details: Mapped[int | None] = mapped_column(Integer)
    specifics_to_memories: Mapped[int | None] = mapped_column(Integer)
    # The condensed messages' specifics by salience (recap/core/retention/salience.py): stated
    # by the user, referred to again, used by the assistant right after a tool
    # returned them, the rest kept; and those left in the archive only (a tool
    # returned them and nothing used them).
    specifics_stated: Mapped[int | None] = mapped_column(Integer)
    specifics_referred: Mapped[int | None] = mapped_column(Integer)
    specifics_used: Mapped[int | None] = mapped_column(Integer)
    specifics_rest: Mapped[int | None] = mapped_column(Integer)
    specifics_archived: Mapped[int | None] = mapped_column(Integer)
    messages_held_back: Mapped[int | None] = mapped_column(Integer)
    repaired: Mapped[bool | None] = mapped_column(Boolean)
    # What the repair call cost (API tokens), and whether the guard skipped it because
    # repairs had stopped helping this model (recap.core.retention.repairs).
    repair_input_tokens: Mapped[int | None] = mapped_column(Integer)
    repair_output_tokens: Mapped[int | None] = mapped_column(Integer)
    repair_skipped: Mapped[bool | None] = mapped_column(Boolean)
    # Summary answers the job refused as frozen (the previous summary back, the new
    # messages ignored: recap.core.prompts.frozen) or empty, each asked again another way.
    frozen_answers: Mapped[int | None] = mapped_column(Integer)
    # Times the job sent its batch again after an unusable answer (another way, its
    # chunk in halves, its facts alone; RECAP_MAX_RESENDS bounds them), and the input
    # tokens those calls spent.
    resends: Mapped[int | None] = mapped_column(Integer)
    resend_input_tokens: Mapped[int | None] = mapped_column(Integer)
    # An applied run whose summary Recap kept extractively (recap.core.retention.
    # extractive) because no way of asking the model gave a usable one.
    fallback: Mapped[bool | None] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())
    # A rewind's run (recap.sessions.rewind): it deleted the messages after this id,
    # up to last_message_id. NULL for every other run.
    rewound_after: Mapped[int | None] = mapped_column(BigInteger)
    # Set on an applied run whose summary a rewind undid: the rewind's run id. Its
    # messages are no longer condensed (restored or deleted by that rewind).
    undone_by: Mapped[int | None] = mapped_column(BigInteger)

    __table_args__ = (
        Index("ix_summary_runs_session_id_id", "session_id", "id"),
        Index("ix_summary_runs_status_created_at", "status", "created_at"),
        Index("ix_summary_runs_model_status_id", "model", "status", "id"),
        CheckConstraint(
            "status IN ('applied', 'skipped', 'superseded', 'failed', 'dead')", name="status"),
        {"sqlite_autoincrement": True},
    )


class TitleRun(Base):
    """The audit row of one title call (recap.worker.jobs.titles): its API usage for
    ``recap stats`` and its error for ``recap failures``. No FK, like summary_runs."""

    __tablename__ = "title_runs"

    id: Mapped[int] = mapped_column(BigId, Identity(), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(255), nullable=False)
    # titled: stored; kept: a title set meanwhile (by the app) won; failed: see error.
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    model: Mapped[str | None] = mapped_column(String(100))
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())

    __table_args__ = (
        Index("ix_title_runs_session_id_id", "session_id", "id"),
        Index("ix_title_runs_status_id", "status", "id"),
        CheckConstraint("status IN ('titled', 'kept', 'failed')", name="status"),
        {"sqlite_autoincrement": True},
    )


class Heartbeat(Base):
    """When a periodic job last ran, one row per job (``sweep``): read by ``recap metrics``."""

    __tablename__ = "heartbeats"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    at: Mapped[datetime] = mapped_column(Timestamp, nullable=False)


# The Core table, for statements on hot paths: it skips the ORM's statement layer.
runs_table = cast(Table, SummaryRun.__table__)
