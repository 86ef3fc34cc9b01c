"""Requests sized by the model's own token count: the ratio learnt from the server's
count_tokens (recap.llm.calibrate), against the local Messages API server whose
tokenizer counts more than Recap's estimate."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from recap.core.prompts.summarize import Turn
from recap.llm import calibrate
from recap.llm.calibrate import ratio_of
from recap.llm.summarizer import ClaudeSummarizer
from recap.settings import load_settings
from recap.testing import FakeAnthropic
from recap.worker.jobs.resources import build_resources

LIMIT, CAP = 3000, 256


@pytest.fixture
def api(fake_api: FakeAnthropic) -> Iterator[FakeAnthropic]:
    """The server with no ratio learnt for it before or after the test."""
    calibrate.forget()
    fake_api.reset()
    yield fake_api
    fake_api.reset()
    calibrate.forget()


def summarizer(**overrides: object) -> ClaudeSummarizer:
    s = build_resources(load_settings(llm_max_input_tokens=LIMIT, max_summary_tokens=CAP,
                                      summary_mode="plain", **overrides)).summarizer
    assert isinstance(s, ClaudeSummarizer)
    return s


def turns(n: int) -> list[Turn]:
    return [Turn(i, "user" if i % 2 else "assistant",
                 f"Deploy {i} of the billing service failed with error E{i * 7} at "
                 f"10:{i % 60:02d}; we rolled back, paged the on-call engineer and "
                 "opened an incident review.")
            for i in range(1, n + 1)]


def over_the_limit(api: FakeAnthropic) -> list[int]:
    """The requests whose input by the model's count, plus the answer's room, does not
    fit the limit."""
    sizes = [api.model_tokens(body) + body["max_tokens"] for body in api.requests]
    return [size for size in sizes if size > LIMIT]


def test_a_model_that_counts_more_gets_requests_within_the_limit_by_its_count(
        api: FakeAnthropic) -> None:
    api.count_tokens(ratio=1.5)
    summarizer().summarize(None, turns(120))
    assert len(api.requests) >= 3 and len(api.counted) == 1  # asked once
    assert over_the_limit(api) == []
    # The same batch sized by Recap's count alone overflows that model's window.
    api.reset()
    api.count_tokens(ratio=1.5)
    summarizer(llm_calibrate_tokens=False).summarize(None, turns(120))
    assert api.counted == [] and over_the_limit(api) != []


def test_the_ratio_is_learnt_once_per_server_and_model(api: FakeAnthropic) -> None:
    api.count_tokens(ratio=1.5)
    first = summarizer()
    first.summarize(None, turns(10))
    summarizer().summarize("Earlier: deploys failed.", turns(10))
    assert len(api.counted) == 1
    assert calibrate.known_ratio(first.config) == pytest.approx(
        ratio_of(api.model_tokens(api.counted[0]),
                 first.config.count(api.counted[0]["system"])
                 + first.config.count(api.counted[0]["messages"][0]["content"])))
    other = summarizer(model="claude-other-model")
    other.summarize(None, turns(10))
    assert len(api.counted) == 2


def test_a_server_without_count_tokens_leaves_recaps_count_and_says_so_once(
        api: FakeAnthropic, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="recap.llm"):
        for _ in range(2):
            summarizer().summarize(None, turns(10))
    said = [r for r in caplog.records if "does not count tokens" in r.getMessage()]
    assert len(said) == 1 and "RECAP_LLM_MAX_INPUT_TOKENS" in said[0].getMessage()
    assert calibrate.known_ratio(summarizer().config) == 1.0


@pytest.mark.parametrize(("model", "recap", "ratio"), [
    (150, 100, 1.65),  # counts half again as many: that, and the margin
    (100, 100, 1.1),  # the same count: the margin alone
    (80, 100, 1.0),  # counts fewer: the configured limit holds as it is
    (0, 100, 1.0),  # no count: Recap's own
])
def test_ratio_of(model: int, recap: int, ratio: float) -> None:
    assert ratio_of(model, recap) == pytest.approx(ratio)
