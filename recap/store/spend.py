"""The spend sums of chat_sessions (recap.core.spend) read back: one session's, all
sessions' in one aggregate, and which sessions Recap costs more than full history.

Helpers build expressions or take ``db=`` and never commit.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, case, func, literal, select

from recap.core import spend
from recap.core.spend import Spend
from recap.db import Db
from recap.models import sessions_table

S = sessions_table.c
# Spend's fields and the chat_sessions columns that hold them.
COLUMNS: dict[str, Any] = {
    "replies": S.spend_replies,
    "recap_cache_read_tokens": S.spend_recap_read,
    "recap_cache_write_tokens": S.spend_recap_write,
    "recap_uncached_tokens": S.spend_recap_uncached,
    "summarize_input_tokens": S.spend_summarize_input,
    "summarize_output_tokens": S.spend_summarize_output,
    "full_cache_read_tokens": S.spend_full_read,
    "full_cache_write_tokens": S.spend_full_write,
    "full_uncached_tokens": S.spend_full_uncached,
}


def spend_of(row: Any) -> Spend:
    """The :class:`Spend` of a chat_sessions row (an ORM object or a row with the
    columns' names)."""
    return Spend(**{field: int(getattr(row, column.name) or 0)
                    for field, column in COLUMNS.items()})


def session_spend(session_id: str, *, db: Db) -> Spend | None:
    """The session's spend; None if there is no such session."""
    row = db.execute(select(*COLUMNS.values()).where(S.id == session_id)).one_or_none()
    return None if row is None else spend_of(row)


def total_columns() -> dict[str, ColumnElement[Any]]:
    """Aggregates over chat_sessions: each Spend field summed (labelled
    ``spend_<field>``), and ``sessions_at_loss``: sessions whose saved tokens are
    negative (one pass, beside the other counters of ``recap stats``)."""
    sums: dict[str, ColumnElement[Any]] = {
        f"spend_{field}": func.coalesce(func.sum(column), 0)
        for field, column in COLUMNS.items()}
    at_loss = func.coalesce(func.sum(_if_negative(saved_expression())), 0)
    return {**sums, "sessions_at_loss": at_loss}


def total_of(row: Any) -> Spend:
    """The :class:`Spend` of the ``spend_<field>`` sums of :func:`total_columns`."""
    return Spend(**{field: int(row[f"spend_{field}"]) for field in COLUMNS})


def saved_expression() -> ColumnElement[Any]:
    """A session's saved tokens (:attr:`Spend.saved_tokens`, before rounding) in SQL."""
    c = COLUMNS
    full = (c["full_cache_read_tokens"] * literal(spend.CACHE_READ_MULTIPLIER)
            + c["full_cache_write_tokens"] * literal(spend.CACHE_WRITE_MULTIPLIER)
            + c["full_uncached_tokens"] * literal(spend.UNCACHED_MULTIPLIER))
    recap = (c["recap_cache_read_tokens"] * literal(spend.CACHE_READ_MULTIPLIER)
             + c["recap_cache_write_tokens"] * literal(spend.CACHE_WRITE_MULTIPLIER)
             + c["recap_uncached_tokens"] * literal(spend.UNCACHED_MULTIPLIER)
             + c["summarize_input_tokens"] * literal(spend.UNCACHED_MULTIPLIER)
             + c["summarize_output_tokens"] * literal(spend.OUTPUT_MULTIPLIER))
    return full - recap


def _if_negative(value: ColumnElement[Any]) -> ColumnElement[Any]:
    # Half a token: what rounds to a negative saved_tokens.
    return case((value <= -0.5, 1), else_=0)
