"""What Recap's requests cost next to what full history with prompt caching would
have cost for the same replies (pure: the arithmetic and the prices).

Per reply (an assistant message stored), two requests are accounted, each split
into what the prompt cache reads, what it writes and what it cannot cache:

- Recap's: the session's context when the reply was asked for (summary plus
  active messages). Its prefix was cached by the previous reply's request if that
  came within :data:`CACHE_TTL_S`, no fold changed the summary since, and the
  context only grew: that prefix is read, the rest written.
- Full history's: every message the session ever stored before the reply
  (condensed and deleted ones too). The previous reply's full history is read,
  the new messages written; after a pause longer than the TTL, all written.

A request shorter than :data:`MIN_CACHEABLE_TOKENS` is not cached (the API caches
no shorter prefix): it is uncached input. The store keeps the sums
(recap.api.spend); :class:`Spend` prices them. An estimate: tiktoken counts, the
app's own system prompt and tools (the same on both sides) and Recap's memory
block left out, and calls assumed to follow the replies' timestamps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Anthropic's prompt-cache prices, as multiples of the base input price: writing a
# prefix to the 5-minute cache costs 1.25x, reading it 0.1x, uncached input 1x.
CACHE_WRITE_MULTIPLIER = 1.25
CACHE_READ_MULTIPLIER = 0.1
UNCACHED_MULTIPLIER = 1.0
# Output tokens cost 5x input tokens on every current Claude model: the summarizer's
# answers are priced so, next to the input they save.
OUTPUT_MULTIPLIER = 5.0
# The default cache lifetime; each read refreshes it. A reply after a longer pause
# pays a full write on both sides.
CACHE_TTL_S = 300
# The shortest prefix the API caches (Sonnet and Opus; Haiku's is longer).
MIN_CACHEABLE_TOKENS = 1024

# A session's verdict: what the sign of its saved_tokens says.
EVEN = "even"
SAVING = "saving"
LOSS = "loss"


@dataclass(frozen=True)
class Spend:
    """Token sums for one session or all of them (see the module docstring)."""

    replies: int = 0
    recap_cache_read_tokens: int = 0
    recap_cache_write_tokens: int = 0
    recap_uncached_tokens: int = 0
    summarize_input_tokens: int = 0
    summarize_output_tokens: int = 0
    full_cache_read_tokens: int = 0
    full_cache_write_tokens: int = 0
    full_uncached_tokens: int = 0

    @property
    def recap_cost_tokens(self) -> int:
        """Recap's requests plus its summarizing, in base-price input tokens."""
        return round(priced(self.recap_cache_read_tokens, self.recap_cache_write_tokens,
                            self.recap_uncached_tokens)
                     + self.summarize_input_tokens * UNCACHED_MULTIPLIER
                     + self.summarize_output_tokens * OUTPUT_MULTIPLIER)

    @property
    def full_cost_tokens(self) -> int:
        """Full history with caching, in base-price input tokens."""
        return round(priced(self.full_cache_read_tokens, self.full_cache_write_tokens,
                            self.full_uncached_tokens))

    @property
    def saved_tokens(self) -> int:
        """Full history's cost minus Recap's: negative is a loss."""
        return self.full_cost_tokens - self.recap_cost_tokens

    @property
    def verdict(self) -> str:
        saved = self.saved_tokens
        return SAVING if saved > 0 else LOSS if saved < 0 else EVEN

    def as_dict(self) -> dict[str, Any]:
        """The sums, the priced figures and the verdict, flat."""
        full = self.full_cost_tokens
        return {**self.__dict__, "recap_cost_tokens": self.recap_cost_tokens,
                "full_cost_tokens": full, "saved_tokens": self.saved_tokens,
                "saved_share": round(self.saved_tokens / full, 4) if full else None,
                "verdict": self.verdict}


def priced(read: int, write: int, uncached: int) -> float:
    """Input tokens at the cache's prices, in base-price input tokens."""
    return (read * CACHE_READ_MULTIPLIER + write * CACHE_WRITE_MULTIPLIER
            + uncached * UNCACHED_MULTIPLIER)


@dataclass(frozen=True)
class Split:
    """One request's input: read from the cache, written to it, not cacheable."""

    read: int
    write: int
    uncached: int


def split_request(tokens: int, *, prefix: int, warm: bool) -> Split:
    """How a request of ``tokens`` is billed when ``prefix`` tokens of it were sent
    by the previous request (``warm``: within the cache's lifetime, same prefix).
    The store runs the same rule in SQL (recap.api.spend); this is its reference."""
    if tokens < MIN_CACHEABLE_TOKENS:
        return Split(0, 0, tokens)
    if warm and MIN_CACHEABLE_TOKENS <= prefix <= tokens:
        return Split(prefix, tokens - prefix, 0)
    return Split(0, tokens, 0)
