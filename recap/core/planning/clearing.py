"""Whether clearing tool output pays (pure), priced against Claude's prompt cache.

Clearing (recap.core.retention.stubs) changes a message in the middle of the
window: the next reply writes everything from the first changed message on to
the cache again, once, at WRITE (1.25x base input). Each later reply then reads
the cleared tokens less, at READ (0.1x), for as many replies as the session has
left. A session's remaining replies are not known; a session that has already
gone on for ``replies`` is taken to go on about as long again (at least
MIN_REPLIES), the usual estimate for lifetimes of unknown length.

Clearing happens only when that pays, so stubs come in batches (many results at
once) and do not change the prefix on every reply.
"""

from __future__ import annotations

from recap.core.planning.adaptive import READ, WRITE

# Replies expected of any session, however young: a tool loop goes on for a few.
MIN_REPLIES = 4


def remaining_replies(replies: int) -> int:
    """Replies a session that has had ``replies`` is expected to have left."""
    return max(MIN_REPLIES, replies)


def clearing_pays(cleared_tokens: int, rewritten_tokens: int, *, replies: int) -> bool:
    """Whether clearing ``cleared_tokens`` pays: the cache reads it saves over the
    session's remaining replies (after ``replies`` so far) exceed the cache write
    of the ``rewritten_tokens`` from the first changed message on (after clearing)."""
    saved = cleared_tokens * READ * remaining_replies(replies)
    return cleared_tokens > 0 and saved > rewritten_tokens * WRITE
