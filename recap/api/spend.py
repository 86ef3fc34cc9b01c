"""The reply path's share of the spend sums (recap.core.spend): the SET clauses the
message upsert (:func:`recap.api.core.add_statement`, the sync SQLite path) adds,
so a stored reply accounts for the two requests of its call in the same statement.

Every expression reads the session row as it was before the write (an upsert's
SET sees the old row) and adds to it: no read-modify-write, so concurrent writers
of a session cannot lose an increment. A message that is not a reply only adds
its tokens to ``history_tokens``. The rule is
:func:`recap.core.spend.split_request`'s, in SQL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, case, literal

from recap.core.spend import MIN_CACHEABLE_TOKENS
from recap.models import sessions_table

__all__ = ["REPLY_ROLE", "spend_changes"]

S = sessions_table.c
# A stored assistant message is one Claude call's answer: one request accounted.
REPLY_ROLE = "assistant"


def spend_changes(*, reply: Any, tokens: Any, now: Any,
                  cache_after: Any) -> dict[str, ColumnElement[Any]]:
    """The upsert's SET clauses for a message of ``tokens`` stored at ``now``;
    ``reply`` is true for a reply, ``cache_after`` is ``now`` minus the cache's
    lifetime (bound parameters, or values the caller binds)."""
    recap = S.summary_tokens + S.active_tokens
    warm = reply & S.spend_prefix_at.isnot(None) & (S.spend_prefix_at > cache_after)
    # A fold since the last reply rewrote the summary, so Recap's prefix changed.
    recap_read, recap_write, recap_uncached = _split(
        recap, prefix=S.spend_prefix_tokens, warm=warm & (S.spend_prefix_version
                                                          == S.summary_version))
    full_read, full_write, full_uncached = _split(S.history_tokens,
                                                  prefix=S.spend_prefix_history, warm=warm)

    def add(column: Any, amount: Any) -> ColumnElement[Any]:
        return column + case((reply, amount), else_=0)

    def mark(column: Any, value: Any) -> ColumnElement[Any]:
        return case((reply, value), else_=column)

    return {
        "history_tokens": S.history_tokens + tokens,
        "spend_replies": add(S.spend_replies, 1),
        "spend_recap_read": add(S.spend_recap_read, recap_read),
        "spend_recap_write": add(S.spend_recap_write, recap_write),
        "spend_recap_uncached": add(S.spend_recap_uncached, recap_uncached),
        "spend_full_read": add(S.spend_full_read, full_read),
        "spend_full_write": add(S.spend_full_write, full_write),
        "spend_full_uncached": add(S.spend_full_uncached, full_uncached),
        "spend_prefix_tokens": mark(S.spend_prefix_tokens, recap),
        "spend_prefix_history": mark(S.spend_prefix_history, S.history_tokens),
        "spend_prefix_version": mark(S.spend_prefix_version, S.summary_version),
        "spend_prefix_at": mark(S.spend_prefix_at, now),
    }


def _split(tokens: Any, *, prefix: Any, warm: Any) -> tuple[ColumnElement[Any], ...]:
    """(read, written, uncached) of a request of ``tokens`` whose first ``prefix``
    tokens the previous request sent (``warm``: within the cache's lifetime)."""
    least = literal(MIN_CACHEABLE_TOKENS)
    cacheable = tokens >= least
    hit = cacheable & warm & (prefix >= least) & (prefix <= tokens)
    return (case((hit, prefix), else_=0),
            case((hit, tokens - prefix), (cacheable, tokens), else_=0),
            case((cacheable, 0), else_=tokens))
