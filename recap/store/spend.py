"""The spend sums of chat_sessions (recap.core.spend) read back: one session's, all
sessions' in one aggregate, and which sessions Recap costs more than full history.

Helpers build expressions or take ``db=`` and never commit.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, case, func, literal, select

from recap.core.planning.prices import DEFAULT_PRICES, Prices
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


def spend_of(row: Any, *, prices: Prices = DEFAULT_PRICES) -> Spend:
    """The :class:`Spend` of a chat_sessions row (an ORM object or a row with the
    columns' names), costed at ``prices`` (the session's: Settings.prices_of)."""
    return Spend(**{field: int(getattr(row, column.name) or 0)
                    for field, column in COLUMNS.items()}, prices=prices)


def session_spend(session_id: str, *, db: Db, prices: Prices = DEFAULT_PRICES) -> Spend | None:
    """The session's spend; None if there is no such session."""
    row = db.execute(select(*COLUMNS.values()).where(S.id == session_id)).one_or_none()
    return None if row is None else spend_of(row, prices=prices)


def total_columns(prices: Prices = DEFAULT_PRICES) -> dict[str, ColumnElement[Any]]:
    """Aggregates over chat_sessions: each Spend field summed (labelled
    ``spend_<field>``), and ``sessions_at_loss``: sessions on the deployment's
    settings whose saved tokens at ``prices`` are negative (one pass, beside the
    other counters of ``recap stats``); those with overrides are judged each at its
    own prices (recap.ops.stats.overridden_at_loss)."""
    sums: dict[str, ColumnElement[Any]] = {
        f"spend_{field}": func.coalesce(func.sum(column), 0)
        for field, column in COLUMNS.items()}
    at_loss = func.coalesce(func.sum(case((S.overrides.isnot(None), 0),
                                          else_=_if_negative(saved_expression(prices)))), 0)
    return {**sums, "sessions_at_loss": at_loss}


def total_of(row: Any, *, prices: Prices = DEFAULT_PRICES) -> Spend:
    """The :class:`Spend` of the ``spend_<field>`` sums of :func:`total_columns`."""
    return Spend(**{field: int(row[f"spend_{field}"]) for field in COLUMNS}, prices=prices)


def saved_expression(prices: Prices = DEFAULT_PRICES) -> ColumnElement[Any]:
    """A session's saved tokens (:attr:`Spend.saved_tokens`, before rounding) in SQL,
    at ``prices``."""
    c = COLUMNS

    def at(value: float) -> Any:
        return literal(value)

    full = (c["full_cache_read_tokens"] * at(prices.read)
            + c["full_cache_write_tokens"] * at(prices.write)
            + c["full_uncached_tokens"])
    recap = (c["recap_cache_read_tokens"] * at(prices.read)
             + c["recap_cache_write_tokens"] * at(prices.write)
             + c["recap_uncached_tokens"]
             + c["summarize_input_tokens"] * at(prices.call_input)
             + c["summarize_output_tokens"] * at(prices.call_output))
    return full - recap


def _if_negative(value: ColumnElement[Any]) -> ColumnElement[Any]:
    # Half a token: what rounds to a negative saved_tokens.
    return case((value <= -0.5, 1), else_=0)


def at_loss_rows(*, prices: Prices, where: ColumnElement[bool] | None, limit: int) -> Any:
    """The select of sessions (id, overrides, the spend columns) on the deployment's
    prices that are at a loss at ``prices``, largest loss first, at most ``limit``,
    limited by ``where`` (a tenant's ids)."""
    saved = saved_expression(prices)
    query = (select(S.id, S.overrides, *COLUMNS.values())
             .where(S.overrides.is_(None), saved <= -0.5)
             .order_by(saved, S.id).limit(limit))
    return query if where is None else query.where(where)


def overridden_rows(*, where: ColumnElement[bool] | None) -> Any:
    """The select of sessions with their own settings (id, overrides, the spend
    columns): each is judged at its own prices (ix_chat_sessions_overridden)."""
    query = select(S.id, S.overrides, *COLUMNS.values()).where(
        S.overrides.isnot(None), S.spend_replies > 0)
    return query if where is None else query.where(where)
