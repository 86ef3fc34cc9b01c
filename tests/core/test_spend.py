"""recap.core.spend: how one request is billed, and how the sums are priced."""

from __future__ import annotations

import pytest

from recap.core.planning.prices import DEFAULT_PRICES, prices_for
from recap.core.spend import (
    MIN_CACHEABLE_TOKENS,
    Spend,
    Split,
    split_request,
)

pytestmark = pytest.mark.unit

BIG = 10 * MIN_CACHEABLE_TOKENS


def test_a_warm_request_reads_its_prefix_and_writes_the_rest() -> None:
    assert split_request(BIG, prefix=BIG - 300, warm=True) == Split(BIG - 300, 300, 0)


def test_a_cold_request_or_one_whose_prefix_changed_writes_everything() -> None:
    assert split_request(BIG, prefix=BIG - 300, warm=False) == Split(0, BIG, 0)
    # The context shrank (a fold, a rewind): the previous request is no prefix.
    assert split_request(BIG, prefix=BIG + 1, warm=True) == Split(0, BIG, 0)


def test_a_short_request_or_prefix_is_not_cached() -> None:
    assert split_request(MIN_CACHEABLE_TOKENS - 1, prefix=10, warm=True) == Split(
        0, 0, MIN_CACHEABLE_TOKENS - 1)
    # The previous request was too short to be cached: nothing to read.
    assert split_request(BIG, prefix=MIN_CACHEABLE_TOKENS - 1, warm=True) == Split(0, BIG, 0)


def test_prices_follow_the_multipliers_and_the_sign_names_the_verdict() -> None:
    full = Spend(replies=2, full_cache_read_tokens=10_000, full_cache_write_tokens=2_000)
    # The pure default: one model replies and summarizes (read 0.1x, write 1.25x,
    # output 5x of its input).
    p = DEFAULT_PRICES
    assert (p.read, p.write, p.call_input, p.call_output) == pytest.approx((0.1, 1.25, 1, 5))
    assert full.full_cost_tokens == round(10_000 * 0.1 + 2_000 * 1.25) == 3_500
    cheaper = Spend(**{**full.sums(), "recap_cache_read_tokens": 2_000,
                       "recap_cache_write_tokens": 1_000, "summarize_input_tokens": 1_000,
                       "summarize_output_tokens": 100})
    assert cheaper.recap_cost_tokens == round(200 + 1_250 + 1_000 + 100 * 5)
    assert (cheaper.saved_tokens, cheaper.verdict) == (3_500 - 2_950, "saving")
    dearer = Spend(**{**cheaper.sums(), "summarize_output_tokens": 1_000})
    assert dearer.saved_tokens < 0 and dearer.verdict == "loss"
    assert dearer.as_dict()["saved_share"] == round(dearer.saved_tokens / 3_500, 4)
    assert Spend().as_dict() | {"verdict": "even", "saved_share": None} == Spend().as_dict()


def test_the_sums_are_priced_at_the_reply_model_and_the_summarizer() -> None:
    # Replies by claude-sonnet-4-5 ($3 input, $0.30 read, $3.75 write), summarized by
    # claude-haiku-4-5 ($1 input, $5 output): the summarizing costs a third as much
    # per token as the same tokens at the reply model's prices.
    sums = {"replies": 20, "full_cache_read_tokens": 40_000, "full_cache_write_tokens": 4_000,
            "recap_cache_read_tokens": 20_000, "recap_cache_write_tokens": 6_000,
            "summarize_input_tokens": 6_000, "summarize_output_tokens": 1_500}
    cheap = Spend(**sums, prices=prices_for("claude-sonnet-4-5", "claude-haiku-4-5"))
    own = Spend(**sums, prices=prices_for("claude-sonnet-4-5", "claude-sonnet-4-5"))
    assert cheap.recap_cost == pytest.approx(2_000 + 7_500 + 6_000 / 3 + 1_500 * 5 / 3)
    assert own.recap_cost == pytest.approx(2_000 + 7_500 + 6_000 + 1_500 * 5)
    assert cheap.full_cost == own.full_cost == pytest.approx(4_000 + 5_000)
    assert (cheap.verdict, own.verdict) == ("loss", "loss")
    assert cheap.saved_tokens == round(9_000 - 14_000) == -5_000
    # In dollars, at the reply model's $3 per million input tokens.
    assert cheap.saved_usd == pytest.approx(-5_000 * 3 / 1e6)
    d = cheap.as_dict()
    assert d["price_basis"].startswith("in claude-sonnet-4-5 input tokens ($3 per MTok): ")
    assert "summarized by claude-haiku-4-5" in d["price_basis"]
    # A cheaper cache read makes full history cheaper, so the same sums save less.
    fortieth = Spend(**sums, prices=prices_for("claude-opus-4-5", "claude-haiku-4-5"))
    assert fortieth.prices.read == pytest.approx(0.1)
    fable = Spend(**sums, prices=prices_for("claude-fable-5-1", "claude-haiku-4-5"))
    assert fable.prices.read == pytest.approx(0.025) and fable.full_cost < cheap.full_cost
