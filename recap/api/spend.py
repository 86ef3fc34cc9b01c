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

from sqlalchemy import ColumnElement, Integer, case, literal_column

from recap.core.spend import MIN_CACHEABLE_TOKENS
from recap.models import sessions_table

__all__ = ["REPLY_ROLE", "spend_changes"]

S = sessions_table.c
# Constants in the statement's text, not bound parameters (the reply path runs it
# on every message).
ZERO = literal_column("0", Integer)
ONE = literal_column("1", Integer)
# A stored assistant message is one Claude call's answer: one request accounted.
REPLY_ROLE = "assistant"


def spend_changes(*, reply: bool, tokens: Any, now: Any,
                  cache_after: Any) -> dict[str, ColumnElement[Any]]:
    """The upsert's SET clauses for a message of ``tokens`` stored at ``now``;
    ``reply``: whether it is a reply (a Python value: the statement for each kind
    is built once, and a message that is not a reply carries no accounting at all);
    ``cache_after`` is ``now`` minus the cache's lifetime (a bound parameter, or a
    value the caller binds)."""
    history = {"history_tokens": S.history_tokens + tokens}
    if not reply:
        return history
    recap = S.summary_tokens + S.active_tokens
    warm = S.spend_prefix_at.isnot(None) & (S.spend_prefix_at > cache_after)
    # A fold since the last reply rewrote the summary, so Recap's prefix changed.
    recap_read, recap_write, recap_uncached = _split(
        recap, prefix=S.spend_prefix_tokens, warm=warm & (S.spend_prefix_version
                                                          == S.summary_version))
    full_read, full_write, full_uncached = _split(S.history_tokens,
                                                  prefix=S.spend_prefix_history, warm=warm)
    return {
        **history,
        "spend_replies": S.spend_replies + ONE,
        "spend_recap_read": S.spend_recap_read + recap_read,
        "spend_recap_write": S.spend_recap_write + recap_write,
        "spend_recap_uncached": S.spend_recap_uncached + recap_uncached,
        "spend_full_read": S.spend_full_read + full_read,
        "spend_full_write": S.spend_full_write + full_write,
        "spend_full_uncached": S.spend_full_uncached + full_uncached,
        "spend_prefix_tokens": recap,
        "spend_prefix_history": S.history_tokens,
        "spend_prefix_version": S.summary_version,
        "spend_prefix_at": now,
    }


def _split(tokens: Any, *, prefix: Any, warm: Any) -> tuple[ColumnElement[Any], ...]:
    """(read, written, uncached) of a request of ``tokens`` whose first ``prefix``
    tokens the previous request sent (``warm``: within the cache's lifetime)."""
    least = literal_column(str(int(MIN_CACHEABLE_TOKENS)), Integer)
    cacheable = tokens >= least
    hit = cacheable & warm & (prefix >= least) & (prefix <= tokens)
    return (case((hit, prefix), else_=ZERO),
            case((hit, tokens - prefix), (cacheable, tokens), else_=ZERO),
            case((cacheable, ZERO), else_=tokens))
