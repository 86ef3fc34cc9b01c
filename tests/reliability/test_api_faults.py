"""Every Claude API fault the local server can produce, through the real task on the
in-process worker: the right runs are recorded, nothing is lost, and a failed
attempt changes nothing (the retry sends exactly the same request)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from recap import cli
from recap.core.prompts.summarize import SYSTEM_PROMPT
from recap.core.retention.extractive import HEADER
from recap.llm.calibrate import ratio_of
from recap.llm.templates import default_template
from recap.llm.tokens import count_tokens
from recap.settings import get_settings
from recap.testing import FakeAnthropic, Reply, error, ok
from recap.testing.usage import fake_tokens
from tests.env import API_KEY
from tests.helpers import (
    LOW,
    assert_invariants,
    message_ids,
    run_and_wait,
    runs,
    seed,
    sentence,
    session_row,
    statuses,
    wait_for,
)

FIRST = "FIRST-SUMMARY: the user planned a launch for March 14th."
SECOND = "SECOND-SUMMARY: the launch moved to Friday with a $2,400 budget."

pytestmark = [pytest.mark.system, pytest.mark.usefixtures("celery_worker_thread")]


@pytest.fixture(autouse=True)
def low_thresholds(settings_env: Callable[..., None]) -> None:
    settings_env(**LOW)


def with_first_summary(sid: str, fake: FakeAnthropic) -> list[int]:
    """A session with one applied summary and enough new messages to trigger again."""
    ids = seed(sid, 12)
    fake.script(ok(FIRST))
    run_and_wait(sid)
    assert statuses(sid) == ["applied"]
    fake.reset()
    return ids + seed(sid, 5)


# (fault, text the failed run's error must contain)
TRANSIENT: dict[str, tuple[Reply, str]] = {
    "429 rate limit": (error(429, "rate limited", headers={"retry-after": "0"}), "429"),
    "529 overloaded": (error(529, "Overloaded"), "529"),
    "500 server error": (error(500, "internal"), "InternalServerError"),
    "503 unavailable": (error(503, "unavailable"), "503"),
    "reset mid-response": (Reply("reset"), "APIConnectionError"),
    "hang past timeout": (Reply("hang"), "Timeout"),
    "malformed JSON": (Reply("malformed"), "malformed"),
    "empty content": (ok(""), "UnusableSummary"),
    "max_tokens cut-off": (ok("The user ...", stop_reason="max_tokens"), "UnusableSummary"),
}


# The next way's answer, unusable too.
AGAIN = {"empty content": ok("", stop_reason="max_tokens"),
         "max_tokens cut-off": ok("The user said ...", stop_reason="max_tokens")}


# Unusable answers are asked again another way inside the same job
# (recap.llm.summarizer), then kept extractively: tested below.
UNUSABLE = ("empty content", "max_tokens cut-off")


@pytest.mark.parametrize("name", [n for n in TRANSIENT if n not in UNUSABLE])
def test_transient_fault_is_retried_and_changes_nothing(
        name: str, fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    fault, expected = TRANSIENT[name]
    settings_env(**LOW, RECAP_LLM_TIMEOUT_S=1)  # the hang fails after one second
    sid = "fault-" + name.replace(" ", "-")
    ids = with_first_summary(sid, fake_api)
    before = message_ids(sid)

    fake_api.script(fault, fault, ok(SECOND))
    run_and_wait(sid, n=2)

    assert statuses(sid) == ["applied", "failed", "failed", "applied"]
    failed = runs(sid)[1:3]
    for run in failed:
        assert expected in (run.error or ""), run.error
        assert run.messages_condensed == 0
        assert API_KEY not in (run.error or "")
    # The three requests of the job are identical: the failed attempts changed
    # neither the batch nor the previous summary they were folded onto.
    prompts = fake_api.prompts()
    assert len(prompts) == 3 and len(set(prompts)) == 1
    assert FIRST in prompts[0]
    row = session_row(sid)
    assert row is not None and row.rolling_summary == SECOND and row.summary_version == 2
    assert message_ids(sid) == before[5:]
    assert_invariants({sid: ids})


@pytest.mark.parametrize("name", UNUSABLE)
def test_an_answer_unusable_every_way_is_kept_extractively_not_retried(
        name: str, fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    fault, expected = TRANSIENT[name]
    settings_env(**LOW, RECAP_LLM_TIMEOUT_S=1)
    sid = "unusable-" + name.replace(" ", "-")
    ids = with_first_summary(sid, fake_api)
    before = message_ids(sid)
    fake_api.script(fault, AGAIN[name], ok(SECOND))
    run_and_wait(sid, n=2)

    # Every way was asked within the job: the batch is kept extractively, labelled,
    # with no retry sending the same requests again (tests/jobs/test_fallback.py).
    assert statuses(sid) == ["applied", "applied"]
    run = runs(sid)[-1]
    assert run.fallback and expected in (run.reason or ""), run.reason
    row = session_row(sid)
    assert row is not None and row.summary_version == 2
    assert FIRST in (row.rolling_summary or "") and HEADER in (row.rolling_summary or "")
    assert message_ids(sid) == before[5:]
    assert_invariants({sid: ids})


def test_persistent_overload_dead_letters_with_summary_unchanged(
        fake_api: FakeAnthropic) -> None:
    sid = "overload-dead"
    ids = with_first_summary(sid, fake_api)
    before = message_ids(sid)
    fake_api.always(error(529, "Overloaded"))
    run_and_wait(sid, n=2)
    assert statuses(sid) == ["applied", "failed", "failed", "failed", "dead"]
    row = session_row(sid)
    assert row is not None
    assert (row.rolling_summary, row.summary_version) == (FIRST, 1)
    assert row.blocked_until is not None and row.lease_token is None
    assert message_ids(sid) == before
    assert_invariants({sid: ids})


def test_retry_after_is_honoured(fake_api: FakeAnthropic,
                                 settings_env: Callable[..., None]) -> None:
    # The backoff alone would retry within a fraction of a second; the server asks
    # for 1 s. The cap must leave room for it (the test defaults cap below 1 s).
    settings_env(**LOW, RECAP_RETRY_BACKOFF_S=0.05, RECAP_RETRY_BACKOFF_MAX_S=2)
    sid = "retry-after"
    ids = seed(sid, 12)
    fake_api.script(error(429, "slow down", headers={"retry-after": "1"}), ok(SECOND))
    run_and_wait(sid)
    failed, applied = runs(sid)
    assert (failed.status, applied.status) == ("failed", "applied")
    assert "RateLimitError" in (failed.error or "")
    # A floor, not a speed check: the retried attempt cannot start before the
    # failure was recorded plus the delay the server asked for.
    assert (applied.created_at - failed.created_at).total_seconds() >= 0.95
    assert_invariants({sid: ids})


def request_tokens(body: dict[str, object]) -> int:
    messages = body["messages"]
    assert isinstance(messages, list)
    return count_tokens(str(body["system"])) + count_tokens(messages[0]["content"])


def input_limit_carrying(turn_tokens: int) -> int:
    """A RECAP_LLM_MAX_INPUT_TOKENS whose requests carry about ``turn_tokens`` of
    Recap's tokens of seeded turns, at the ratio calibration learns of the stand-in
    (its count over Recap's, with the margin: recap.llm.calibrate)."""
    prompt = default_template() + SYSTEM_PROMPT
    sample = prompt + sentence(0, 250)
    ratio = ratio_of(fake_tokens(len(sample)), count_tokens(sample))
    return (math.ceil((count_tokens(prompt) + turn_tokens) * ratio)
            + 2 * get_settings().max_summary_tokens)


def test_prompt_too_long_halves_the_chunk_instead_of_retrying(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    # Room for the whole batch of 5 long messages in one request, but not in half.
    settings_env(**LOW, RECAP_LLM_MAX_INPUT_TOKENS=input_limit_carrying(2200))
    sid = "too-long"
    ids = seed(sid, 12, words=250)
    fake_api.script(error(400, "prompt is too long: 210000 tokens > 200000 maximum"))
    run_and_wait(sid)

    assert statuses(sid) == ["applied"]  # no failed run: handled inside the job
    assert fake_api.counted  # sized by the stand-in's own count (calibration on)
    first, *rest = fake_api.requests
    assert len(rest) >= 2, "the rejected chunk must be resent as smaller chunks"
    assert all(request_tokens(r) < request_tokens(first) for r in rest)
    # The smaller chunks together carry exactly the rejected batch, once each.
    carried = "".join(str(r["messages"][0]["content"]) for r in rest)
    for i in range(5):
        assert carried.count(f"(msg {i}).") == 1
    assert message_ids(sid) == ids[5:]
    assert_invariants({sid: ids})


def test_prompt_too_long_at_every_size_is_dead_after_a_few_requests(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_LLM_MAX_INPUT_TOKENS=input_limit_carrying(2200))
    sid = "too-long-always"
    ids = seed(sid, 12, words=250)
    fake_api.always(error(400, "prompt is too long: 210000 tokens > 200000 maximum"))
    run_and_wait(sid)
    assert statuses(sid) == ["dead"]  # permanent: no Celery retry
    assert "PromptTooLong" in (runs(sid)[0].error or "")
    # Halving stops at the minimum chunk size: a handful of requests, not a loop.
    assert 2 <= len(fake_api.requests) <= 4
    assert message_ids(sid) == ids
    assert_invariants({sid: ids})


def test_bad_key_is_not_retried_and_recap_retry_recovers(
        fake_api: FakeAnthropic, capsys: pytest.CaptureFixture[str]) -> None:
    sid = "bad-key"
    ids = with_first_summary(sid, fake_api)
    before = message_ids(sid)
    fake_api.always(error(401, "invalid x-api-key"))
    run_and_wait(sid, n=2)

    assert statuses(sid) == ["applied", "dead"]
    assert len(fake_api.requests) == 1  # never retried
    dead = runs(sid)[-1]
    assert "AuthenticationError" in (dead.error or "") and "401" in (dead.error or "")
    row = session_row(sid)
    assert row is not None and row.blocked_until is not None
    assert (row.rolling_summary, row.summary_version) == (FIRST, 1)
    assert message_ids(sid) == before
    assert_invariants({sid: ids})

    # The operator fixes the key, then asks for a retry.
    fake_api.always(None)
    fake_api.script(ok(SECOND))
    assert cli.main(["retry", sid]) == 0
    assert "queued summarize job" in capsys.readouterr().out
    wait_for(lambda: statuses(sid).count("applied") == 2, timeout=30, what="the retried apply")
    assert statuses(sid) == ["applied", "dead", "applied"]
    row = session_row(sid)
    assert row is not None and row.blocked_until is None and row.rolling_summary == SECOND
    assert message_ids(sid) == before[5:]
    assert_invariants({sid: ids})
