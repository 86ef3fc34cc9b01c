"""recap.core.spend: how one request is billed, and how the sums are priced."""

from __future__ import annotations

import pytest

from recap.core.spend import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_MULTIPLIER,
    MIN_CACHEABLE_TOKENS,
    OUTPUT_MULTIPLIER,
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
    assert full.full_cost_tokens == round(10_000 * CACHE_READ_MULTIPLIER
                                          + 2_000 * CACHE_WRITE_MULTIPLIER) == 3_500
    cheaper = Spend(**{**full.__dict__, "recap_cache_read_tokens": 2_000,
                       "recap_cache_write_tokens": 1_000, "summarize_input_tokens": 1_000,
                       "summarize_output_tokens": 100})
    assert cheaper.recap_cost_tokens == round(200 + 1_250 + 1_000 + 100 * OUTPUT_MULTIPLIER)
    assert (cheaper.saved_tokens, cheaper.verdict) == (3_500 - 2_950, "saving")
    dearer = Spend(**{**cheaper.__dict__, "summarize_output_tokens": 1_000})
    assert dearer.saved_tokens < 0 and dearer.verdict == "loss"
    assert dearer.as_dict()["saved_share"] == round(dearer.saved_tokens / 3_500, 4)
    assert Spend().as_dict() | {"verdict": "even", "saved_share": None} == Spend().as_dict()
