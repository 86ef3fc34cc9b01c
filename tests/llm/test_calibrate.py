"""Requests sized by the model's own token count: the ratio learnt from the server's
count_tokens (recap.llm.calibrate), against the local Messages API server whose
tokenizer counts more than Recap's estimate; a count that trickles in is cut at
the total deadline, an outlandish one is refused, and what one tenant's text
taught is never used for another tenant's folds."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from recap.core.prompts.summarize import Turn
from recap.llm import calibrate
from recap.llm.calibrate import MAX_COUNT, MAX_FACTOR, MAX_RATIO, implausible, ratio_of
from recap.llm.summarizer import ClaudeSummarizer
from recap.settings import load_settings
from recap.testing import FakeAnthropic, Reply, count, error, ok
from recap.worker.jobs.resources import build_resources
from tests.helpers import LOW, run_and_wait, runs, seed, session_row

LIMIT, CAP = 3000, 256


@pytest.fixture
def api(fake_api: FakeAnthropic) -> Iterator[FakeAnthropic]:
    """The server with no ratio learnt for it before or after the test."""
    calibrate.forget()
    fake_api.reset()
    yield fake_api
    fake_api.reset()
    calibrate.forget()


def summarizer(tenant: str | None = None, **overrides: object) -> ClaudeSummarizer:
    s = build_resources(load_settings(llm_max_input_tokens=LIMIT, max_summary_tokens=CAP,
                                      summary_mode="plain", **overrides)).summarizer
    assert isinstance(s, ClaudeSummarizer)
    return dataclasses.replace(s, config=s.config.for_tenant(tenant))


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
    api.count_tokens(None)
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
    (400, 100, MAX_RATIO),  # the most a count may say: the ratio's bound
    (401, 100, 1.0),  # further off: refused
    (10**400, 100, 1.0),  # no float holds it: refused, never an OverflowError
])
def test_ratio_of(model: int, recap: int, ratio: float) -> None:
    assert ratio_of(model, recap) == pytest.approx(ratio)


@pytest.mark.unit
@pytest.mark.parametrize(("value", "why"), [
    (10**15, f"above {MAX_COUNT:,} tokens"),
    (10**400, "above"),
    (-5, "not positive"),
    (0, "not positive"),
    (True, "not an integer"),
    (120.0, "not an integer"),
    ("120", "not an integer"),
    (None, "not an integer"),
    (1000, f"more than {MAX_FACTOR:g} times off"),
    (20, f"more than {MAX_FACTOR:g} times off"),
])
def test_implausible_counts_are_refused_with_the_reason(value: object, why: str) -> None:
    refused = implausible(value, 100)
    assert refused is not None and why in refused
    assert len(refused) < 200  # a 400-digit count is not repeated in the log
    assert implausible(130, 100) is None


@pytest.mark.parametrize("answer", [count(10**15), count(10**400), count(-3), count(1.5),
                                    count("900"), count(True), count(None), count(1)])
def test_an_outlandish_count_is_refused_once_and_recaps_own_count_sizes_requests(
        api: FakeAnthropic, caplog: pytest.LogCaptureFixture, answer: Reply) -> None:
    if answer.input_tokens is None:
        answer = count({"nested": "nonsense"})  # input_tokens that is not a number at all
    api.counts(answer)
    with caplog.at_level(logging.WARNING, logger="recap.llm"):
        for _ in range(2):
            summarizer().summarize(None, turns(10))
    assert len(api.counted) == 1  # refused once, kept: not asked again
    said = [r.getMessage() for r in caplog.records if "refuses" in r.getMessage()]
    assert len(said) == 1, said
    assert calibrate.known_ratio(summarizer().config) == 1.0


def test_a_trickled_count_is_cut_at_the_deadline_and_not_kept(
        api: FakeAnthropic, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    api.counts(ok(trickle=0.5))  # about a minute for the whole answer
    with caplog.at_level(logging.INFO, logger="recap.llm"):
        result = summarizer(llm_timeout_s=1).summarize(None, turns(10))
    assert result.text and len(api.counted) == 1 and api.trickles_finished == 0
    said = [r.getMessage() for r in caplog.records if "count_tokens at" in r.getMessage()]
    assert len(said) == 1 and "total deadline of 1s" in said[0], said
    # Not kept: sized by Recap's own count for a while (not asked again meanwhile)...
    assert calibrate.known_ratio(summarizer().config) is None
    api.count_tokens(1.5)
    summarizer().summarize(None, turns(10))
    assert len(api.counted) == 1
    # ...then asked again, and learnt from a server that answers.
    monkeypatch.setattr(calibrate, "RETRY_AFTER_S", 0.0)
    summarizer().summarize(None, turns(10))
    assert len(api.counted) == 2 and (calibrate.known_ratio(summarizer().config) or 0) > 1


def test_a_ratio_learnt_from_one_tenants_text_is_never_used_for_anothers(
        api: FakeAnthropic) -> None:
    api.counts(count(10**15), count(-1))
    summarizer("acme").summarize(None, turns(10))
    summarizer(None).summarize(None, turns(10))
    api.count_tokens(1.5)
    summarizer("globex").summarize(None, turns(10))
    assert len(api.counted) == 3  # each tenant's own count
    assert calibrate.known_ratio(summarizer("acme").config) == 1.0
    assert calibrate.known_ratio(summarizer(None).config) == 1.0
    assert (calibrate.known_ratio(summarizer("globex").config) or 0) > 1
    assert calibrate.known_ratio(summarizer("initech").config) is None


@pytest.mark.usefixtures("celery_worker_thread")
def test_a_fold_whose_count_trickles_completes_within_its_lease(
        api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    # 1 s calls in a job with a 30 s lease; the whole count would take about a minute.
    settings_env(**LOW, RECAP_LLM_TIMEOUT_S=1)
    assert load_settings().lease_s < 0.5 * 100
    api.counts(ok(trickle=0.5))
    sid = "acme/trickled-count"
    ids = seed(sid, 12)
    run_and_wait(sid)
    [run] = runs(sid)
    assert run.status == "applied" and not run.fallback, run.error
    assert run.messages_condensed > 0 and len(api.counted) == 1
    assert api.trickles_finished == 0  # the server was still sending
    row = session_row(sid)
    assert row is not None and row.lease_token is None and row.lost_leases == 0
    assert len(ids) > row.message_count


def test_the_stand_in_answers_count_tokens_as_the_api_does(api: FakeAnthropic) -> None:
    import anthropic

    client = anthropic.Anthropic(api_key="test", base_url=api.url, max_retries=0)
    body: dict[str, Any] = {"model": "claude-test", "system": "Be brief.",
            "messages": [{"role": "user", "content": "Where is the Lisbon hotel?"}]}
    counted = client.messages.count_tokens(**body)
    sent = client.messages.create(max_tokens=16, **body)
    assert counted.input_tokens == sent.usage.input_tokens == api.model_tokens(body)
    with pytest.raises(anthropic.BadRequestError, match="text content blocks must be non-empty"):
        client.messages.count_tokens(model="claude-test",
                                     messages=[{"role": "user", "content": " "}])
    api.counts(error(529, "Overloaded"), count(10**400))
    with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
        client.messages.count_tokens(**body)
    assert client.messages.count_tokens(**body).input_tokens == 10**400
    api.count_tokens(None)
    with pytest.raises(anthropic.NotFoundError, match="no route /v1/messages/count_tokens"):
        client.messages.count_tokens(**body)


@pytest.mark.system
def test_a_worker_on_the_stand_in_server_learns_its_count_without_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    import subprocess
    import sys

    server = subprocess.Popen([sys.executable, "-m", "recap.testing", "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # "... listening on http://127.0.0.1:PORT"
        url = line.rsplit(" ", 1)[-1].strip()
        assert url.startswith("http://127.0.0.1:"), line
        calibrate.forget()
        with caplog.at_level(logging.INFO, logger="recap.llm"):
            s = summarizer(anthropic_base_url=url)
            assert s.summarize(None, turns(10)).text
        assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
        assert (calibrate.known_ratio(s.config) or 0) >= 1
        assert any("counts" in r.getMessage() and "requests are sized by" in r.getMessage()
                   for r in caplog.records)
    finally:
        calibrate.forget()
        server.terminate()
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()
