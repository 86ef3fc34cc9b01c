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
(recap.api.spend); :class:`Spend` prices them with the same
:class:`recap.core.planning.prices.Prices` the policy decides with: the replies'
requests at the reply model's cache read, cache write (for the app's cache
lifetime) and input prices, the summarizing at the summarizer's input and output
prices. Costs are in the reply model's base-input tokens (the unit of a fold's
reason) and in USD. An estimate: tiktoken counts, the app's own system prompt and
tools (the same on both sides) and Recap's memory block left out, and calls
assumed to follow the replies' timestamps.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from recap.core.planning.prices import DEFAULT_PRICES, Prices

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
    """Token sums for one session or all of them (see the module docstring), and
    the prices they are costed at."""

    replies: int = 0
    recap_cache_read_tokens: int = 0
    recap_cache_write_tokens: int = 0
    recap_uncached_tokens: int = 0
    summarize_input_tokens: int = 0
    summarize_output_tokens: int = 0
    full_cache_read_tokens: int = 0
    full_cache_write_tokens: int = 0
    full_uncached_tokens: int = 0
    prices: Prices = field(default=DEFAULT_PRICES, compare=False)

    @property
    def recap_cost(self) -> float:
        """Recap's requests plus its summarizing, in the reply model's base-input tokens."""
        p = self.prices
        return (priced(self.recap_cache_read_tokens, self.recap_cache_write_tokens,
                       self.recap_uncached_tokens, prices=p)
                + self.summarize_input_tokens * p.call_input
                + self.summarize_output_tokens * p.call_output)

    @property
    def full_cost(self) -> float:
        """Full history with caching, in the reply model's base-input tokens."""
        return priced(self.full_cache_read_tokens, self.full_cache_write_tokens,
                      self.full_uncached_tokens, prices=self.prices)

    @property
    def recap_cost_tokens(self) -> int:
        return round(self.recap_cost)

    @property
    def full_cost_tokens(self) -> int:
        return round(self.full_cost)

    @property
    def saved_tokens(self) -> int:
        """Full history's cost minus Recap's, in the reply model's base-input tokens
        (rounded once, so its sign is the verdict's): negative is a loss."""
        return round(self.full_cost - self.recap_cost)

    @property
    def saved_usd(self) -> float:
        """:attr:`saved_tokens` in USD, at the reply model's input price."""
        return round(self.prices.usd(self.full_cost - self.recap_cost), 6)

    @property
    def verdict(self) -> str:
        saved = self.saved_tokens
        return SAVING if saved > 0 else LOSS if saved < 0 else EVEN

    def sums(self) -> dict[str, Any]:
        """The token sums alone."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "prices"}

    def as_dict(self) -> dict[str, Any]:
        """The sums, the priced figures, the verdict and the prices' basis, flat."""
        full = self.full_cost
        return {**self.sums(), "recap_cost_tokens": self.recap_cost_tokens,
                "full_cost_tokens": self.full_cost_tokens, "saved_tokens": self.saved_tokens,
                "saved_usd": self.saved_usd,
                "saved_share": round((full - self.recap_cost) / full, 4) if full else None,
                "verdict": self.verdict, "price_basis": basis(self.prices)}


def basis(prices: Prices) -> str:
    """What the costs are in and priced by, in words."""
    return (f"in {prices.reply_model} input tokens (${prices.reply.input:g} per MTok): "
            f"{prices.basis()}")


def priced(read: int, write: int, uncached: int, *, prices: Prices = DEFAULT_PRICES) -> float:
    """A reply's input at the reply model's cache prices, in its base-input tokens."""
    return read * prices.read + write * prices.write + uncached


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
