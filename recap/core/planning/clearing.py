"""Whether clearing tool output pays (pure), priced against Claude's prompt cache.

Clearing (recap.core.retention.stubs) changes a message in the middle of the
window: the next reply writes everything from the first changed message on to
the cache again, once, at the reply model's cache-write price (1.25x its input for the
5-minute lifetime). Each later reply then reads the cleared tokens less, at the reply
model's cache-read price, for as many replies as the session has
left, or until the next fold condenses them anyway, whichever comes first. A
session's remaining replies are estimated as the fold's pricing estimates them
(recap.core.planning.pricing.remaining_replies: about as many again as it has
had), but at least MIN_REPLIES.

Clearing happens only when that pays, so stubs come in batches (many results at
once) and do not change the prefix on every reply.
"""

from __future__ import annotations

from recap.core.planning import pricing
from recap.core.planning.prices import DEFAULT_PRICES, Prices

# Replies expected of any session, however young: a tool loop goes on for a few.
MIN_REPLIES = 4


def remaining_replies(replies: int) -> int:
    """Replies a session that has had ``replies`` is expected to have left, for
    clearing (pricing's estimate, at least MIN_REPLIES)."""
    return max(MIN_REPLIES, pricing.remaining_replies(replies))


def replies_until_fold(context_tokens: int, *, fold_at: int | None, growth: int) -> int | None:
    """Replies until a session of ``context_tokens`` (summary and window) reaches the
    ``fold_at`` mark, growing ``growth`` tokens a reply; None when no mark is known
    (the fixed rule). A fold condenses the oldest messages, the cleared ones first:
    a stub saves cache reads until then, not for the rest of the session."""
    if fold_at is None or growth <= 0:
        return None
    return max(1, (fold_at - context_tokens) // growth)


def clearing_pays(cleared_tokens: int, rewritten_tokens: int, *, replies: int,
                  until_fold: int | None = None, prices: Prices = DEFAULT_PRICES) -> bool:
    """Whether clearing ``cleared_tokens`` pays: the cache reads it saves over the
    session's remaining replies (after ``replies`` so far), or until the next fold
    condenses them (``until_fold``, :func:`replies_until_fold`), exceed the cache
    write of the ``rewritten_tokens`` from the first changed message on (after
    clearing), at the session's reply model's ``prices``."""
    horizon = remaining_replies(replies)
    if until_fold is not None:
        horizon = min(horizon, until_fold)
    costs = pricing.price(removed_tokens=cleared_tokens, call_tokens=0,
                          rewritten_tokens=rewritten_tokens, remaining=horizon,
                          expected_attempts=1, prices=prices)
    return cleared_tokens > 0 and costs.net > 0
