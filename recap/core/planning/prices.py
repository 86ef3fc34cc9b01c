"""What each model charges, per million tokens in USD (pure): base input, output,
cache reads and cache writes for each lifetime (5 minutes, 1 hour).

:data:`TABLE` is Anthropic's published price list (docs/operations/prices.md,
names the page and the date it was read); ``RECAP_PRICES`` replaces or adds rows
(recap.config.prices). :func:`lookup` finds a model's row: its own, else the
nearest row of its family (the longest known id it starts with, else the family's
newest), else :data:`FALLBACK`, and says which, so the edge can warn once.

:class:`Prices` is what a decision prices with: the rates of the session's reply
model (what a reply reads from and writes to the cache), the summarizer's (what a
fold's call reads and answers) and the cache lifetime the app writes with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

TTL = Literal["5m", "1h"]
MILLION = 1_000_000


@dataclass(frozen=True)
class Rates:
    """One model's prices, USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float

    def cache_write(self, ttl: TTL) -> float:
        return self.cache_write_1h if ttl == "1h" else self.cache_write_5m


def _rates(input: float, output: float, read: float) -> Rates:
    # Every row of the published list writes at 1.25x input (5m) and 2x (1h).
    return Rates(input, output, read, input * 1.25, input * 2)


# Anthropic's list (claude-haiku-5-5: its rate for prompts up to 100,000 tokens;
# a longer prompt pays 5x on every token of that request).
TABLE: dict[str, Rates] = {
    "claude-fable-5-1": _rates(10, 50, 0.25),
    "claude-mythos-5-1": _rates(10, 50, 0.25),
    "claude-fable-5": _rates(10, 50, 1),
    "claude-mythos-5": _rates(10, 50, 1),
    "claude-opus-5-5": _rates(4, 20, 0.20),
    "claude-opus-5": _rates(5, 25, 0.50),
    "claude-opus-4-8": _rates(5, 25, 0.50),
    "claude-opus-4-7": _rates(5, 25, 0.50),
    "claude-opus-4-6": _rates(5, 25, 0.50),
    "claude-opus-4-5": _rates(5, 25, 0.50),
    "claude-opus-4-1": _rates(15, 75, 1.50),
    "claude-opus-4": _rates(15, 75, 1.50),
    "claude-sonnet-5-5": _rates(2, 10, 0.10),
    "claude-sonnet-5": _rates(2, 10, 0.20),
    "claude-sonnet-4-5": _rates(3, 15, 0.30),
    "claude-sonnet-4": _rates(3, 15, 0.30),
    "claude-haiku-5-5": _rates(0.10, 0.50, 0.01),
    "claude-haiku-4-5": _rates(1, 5, 0.10),
}
# Each family's row for an id of the family the table does not know (its newest).
FAMILIES: dict[str, str] = {
    "fable": "claude-fable-5-1", "mythos": "claude-mythos-5-1", "opus": "claude-opus-5-5",
    "sonnet": "claude-sonnet-5-5", "haiku": "claude-haiku-5-5",
}
# A model of no known family: priced as a Sonnet-class model, neither the cheapest
# nor the dearest row, so neither side of a decision is favoured by the guess.
FALLBACK = "claude-sonnet-5-5"
# The app's reply model when nothing says which it is (RECAP_REPLY_MODEL).
DEFAULT_REPLY_MODEL = "claude-sonnet-5-5"
DEFAULT_SUMMARIZER_MODEL = "claude-haiku-5-5"


@dataclass(frozen=True)
class Found:
    """A model's rates and the row they come from (``exact``: the model's own)."""

    rates: Rates
    row: str
    exact: bool


def lookup(model: str, table: Mapping[str, Rates] = TABLE) -> Found:
    """The rates of ``model``: its own row, else the longest row id it starts with
    (a dated id, ``claude-sonnet-5-5-20261001``), else its family's, else FALLBACK's."""
    if model in table:
        return Found(table[model], model, True)
    prefixes = [row for row in table if model.startswith(row + "-")]
    if prefixes:
        row = max(prefixes, key=len)
        return Found(table[row], row, False)
    for family, row in FAMILIES.items():
        if family in model.lower() and row in table:
            return Found(table[row], row, False)
    row = FALLBACK if FALLBACK in table else next(iter(table))
    return Found(table[row], row, False)


@dataclass(frozen=True)
class Prices:
    """What a decision or an account prices with: the reply model's rates, the
    summarizer's, the cache lifetime, and the models' names (for the basis)."""

    reply: Rates
    summarizer: Rates
    ttl: TTL = "5m"
    reply_model: str = DEFAULT_REPLY_MODEL
    summarizer_model: str = DEFAULT_SUMMARIZER_MODEL

    # Ratios to the reply model's base input: the unit every priced figure is in.
    @property
    def read(self) -> float:
        return self.reply.cache_read / self.reply.input

    @property
    def write(self) -> float:
        return self.reply.cache_write(self.ttl) / self.reply.input

    @property
    def call_input(self) -> float:
        return self.summarizer.input / self.reply.input

    @property
    def call_output(self) -> float:
        return self.summarizer.output / self.reply.input

    def usd(self, reply_input_tokens: float) -> float:
        """USD of ``reply_input_tokens`` base-input tokens of the reply model."""
        return reply_input_tokens * self.reply.input / MILLION

    def basis(self) -> str:
        """The prices in words, for a reason or a report."""
        r = self.reply
        return (f"{self.reply_model} replies (input ${r.input:g}, cache read ${r.cache_read:g}"
                f", {self.ttl} write ${r.cache_write(self.ttl):g} per MTok), summarized by "
                f"{self.summarizer_model} (input ${self.summarizer.input:g}, output "
                f"${self.summarizer.output:g} per MTok)")


def prices_for(reply_model: str, summarizer_model: str, *, ttl: TTL = "5m",
               table: Mapping[str, Rates] = TABLE) -> Prices:
    """:class:`Prices` for the two models, looked up in ``table`` (:func:`lookup`)."""
    return Prices(lookup(reply_model, table).rates, lookup(summarizer_model, table).rates,
                  ttl, reply_model, summarizer_model)


def with_read(prices: Prices, ratio: float) -> Prices:
    """``prices`` with the reply model's cache reads at ``ratio`` of its input (a
    what-if: the benchmarks' 0.1x, 0.05x, 0.025x)."""
    r = prices.reply
    reply = Rates(r.input, r.output, r.input * ratio, r.cache_write_5m, r.cache_write_1h)
    return Prices(reply, prices.summarizer, prices.ttl, prices.reply_model,
                  prices.summarizer_model)


# What a pure caller that names no prices gets: one model replies and summarizes,
# at the list's standard ratios (cache read 0.1x input, 5-minute write 1.25x,
# output 5x). Settings price the configured models (recap.settings.prices_of).
UNIFORM_MODEL = "claude-sonnet-4-5"
DEFAULT_PRICES = prices_for(UNIFORM_MODEL, UNIFORM_MODEL)
