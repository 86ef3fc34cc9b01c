"""Limits a job must respect: a model id the audit column
cannot hold is refused up front; a failure that cannot even be recorded is its own
outcome and releases the lease; one job's work is bounded so it ends within its
time limit, and a single giant message is clipped with a reason on record.
PostgreSQL and the real SDK against the local Messages API server."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterator

import anthropic
import httpx2
import pytest
from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy import text

from recap.api.ingest import add_message
from recap.db import transaction
from recap.errors import InvalidInput, TransientLLMError, UnknownModelWarning
from recap.llm.summarizer import ClaudeSummarizer
from recap.sessions.overrides import configure_session
from recap.settings import MODEL_MAX_CHARS, get_settings
from recap.testing import FakeAnthropic, error
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from tests.env import FAKE
from tests.helpers import LOW, assert_invariants, message_ids, runs, seed, session_row

# -- item 2: a model id longer than summary_runs.model ----------------------------

def test_a_session_model_longer_than_the_audit_column_is_refused() -> None:
    arn = "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/" + "x" * 60
    assert len(arn) > MODEL_MAX_CHARS
    with pytest.raises(InvalidInput, match="model"):
        configure_session("long-model", {"model": arn}, create=True)
    assert session_row("long-model") is None  # nothing written
    ok = "m" * MODEL_MAX_CHARS
    with pytest.warns(UnknownModelWarning, match="not a Claude model Recap knows"):
        assert configure_session("long-model", {"model": ok}, create=True) == {"model": ok}


@pytest.fixture
def failures_unrecordable() -> Iterator[None]:
    """summary_runs refuses failed/dead rows of session 'unrec': recording fails."""
    with transaction() as s:
        s.execute(text("ALTER TABLE summary_runs ADD CONSTRAINT test_unrecordable "
                       "CHECK (session_id <> 'unrec' OR status NOT IN ('failed', 'dead'))"))
    yield
    with transaction() as s:
        s.execute(text("ALTER TABLE summary_runs DROP CONSTRAINT test_unrecordable"))


def _outcome_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    return [json.loads(r.getMessage()) for r in caplog.records
            if r.name == "recap.worker.jobs" and r.getMessage().startswith("{")]


@pytest.mark.usefixtures("failures_unrecordable")
def test_a_failure_that_cannot_be_recorded_releases_the_lease_and_says_so(
        fake_api: FakeAnthropic, settings_env: Callable[..., None],
        caplog: pytest.LogCaptureFixture) -> None:
    settings_env(**LOW)
    ids = seed("unrec", 12)
    fake_api.always(error(500))
    for attempt, final in ((1, False), (2, True)):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="recap.worker.jobs"), \
                pytest.raises(TransientLLMError):
            summarize("unrec", job=Job(task_id=f"t-{attempt}", attempt=attempt,
                                       final_attempt=final), res=get_resources())
        row = session_row("unrec")
        assert row is not None and row.lease_token is None  # released, not left to expire
        # The next claim found the lease free: no worker is counted as lost.
        assert row.lost_leases == 0
        [line] = _outcome_lines(caplog)
        assert line["status"] == "unrecorded"
        assert "could not record the failure" in str(line["reason"])
        assert "lease released" in str(line["reason"])
        assert "IntegrityError" in str(line["reason"])  # why recording failed
        assert str(line["error"]).startswith("TransientLLMError")  # why the job failed
    assert len(fake_api.requests) == 2  # each attempt called the API (not skipped)
    assert runs("unrec") == [] and message_ids("unrec") == ids


# -- item 7: work bounded per job --------------------------------------------------

BOUNDED = {**LOW, "RECAP_LLM_MAX_INPUT_TOKENS": 2048, "RECAP_MAX_SUMMARY_TOKENS": 256}


def calls_per_job() -> int:
    """How many requests the job budget allows (each may run to the LLM timeout)."""
    s = get_settings()
    return int(s.task_soft_time_limit_s // (2 * s.llm_timeout_s))


def test_a_giant_message_is_clipped_and_summarized_within_the_budget(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**BOUNDED)
    budget = get_settings().job_token_budget()
    giant = " ".join(f"word{i}" for i in range(10_000))  # ~20k tokens
    from recap.llm.tokens import count_tokens

    assert count_tokens(giant) > 8 * budget
    first = add_message("giant", "user", giant)
    seed("giant", 11)
    out = summarize("giant", job=Job(task_id="t-giant"), res=get_resources())
    assert out.status == "applied" and out.messages_condensed == 1
    assert 1 <= len(fake_api.requests) <= calls_per_job()
    prompts = "\n".join(fake_api.prompts())
    assert "word0 " in prompts and "word9999" in prompts  # its first and last parts
    assert "word5000 " not in prompts
    assert "tokens of this message left out" in prompts
    (run,) = runs("giant")
    assert run.status == "applied" and run.first_message_id == first
    reason = run.reason or ""
    assert f"message {first} (" in reason
    assert "summarized from its first and last parts" in reason
    assert first not in message_ids("giant")


def test_a_backlog_is_condensed_a_budget_at_a_time(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**{**BOUNDED, "RECAP_BATCH_SIZE": 20})
    # The stand-in counts more tokens than Recap (calibration learns its ratio).
    budget = get_settings().job_token_budget()
    seed("backlog", 30, words=300)  # ~400 tokens each: 20 of them are far above budget
    out = summarize("backlog", job=Job(task_id="t-backlog"), res=get_resources())
    assert out.status == "applied" and out.more_work  # the rest is for the follow-up
    (run,) = runs("backlog")
    assert run.condensed_tokens is not None and 0 < run.condensed_tokens <= budget
    assert 0 < out.messages_condensed < 20
    assert fake_api.counted  # the ratio was learnt in this job
    assert len(fake_api.requests) <= calls_per_job()


def test_a_model_counting_four_times_recaps_tokens_keeps_every_job_within_its_calls(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**{**BOUNDED, "RECAP_BATCH_SIZE": 20})
    fake_api.count_tokens(2.45)  # about 4 times Recap's count: near the most calibration accepts
    written = seed("dense", 30, words=300)
    calls: list[int] = []
    while len(calls) < 30:
        before = len(fake_api.requests)
        out = summarize("dense", job=Job(task_id=f"t-dense-{len(calls)}"), res=get_resources())
        calls.append(len(fake_api.requests) - before)
        assert out.status == "applied", out.reason
        if not out.more_work:
            break
    assert not out.more_work, "the backlog did not drain"
    assert max(calls) <= calls_per_job(), calls
    applied = runs("dense")
    assert len(applied) == len(calls) > 1  # over follow-up jobs, each within its calls
    # The first job learnt the ratio and cut its planned batch to its requests; the
    # follow-ups planned with the ratio already known.
    assert "request(s) carry at 4." in (applied[0].reason or ""), applied[0].reason
    assert not [r.reason for r in applied[1:] if "request(s) carry" in (r.reason or "")]
    assert len(fake_api.counted) == 1
    # Nothing lost or condensed twice: the runs cover the oldest messages in order.
    condensed = [i for r in applied for i in written
                 if r.first_message_id is not None and r.last_message_id is not None
                 and r.first_message_id <= i <= r.last_message_id]
    left = message_ids("dense")
    assert condensed + left == written
    assert sum(r.messages_condensed or 0 for r in applied) == len(condensed)
    assert_invariants({"dense": written})


# -- item 7: a soft time limit inside the HTTP call --------------------------------

def _time_limited_sdk() -> anthropic.Anthropic:
    """The real SDK whose HTTP transport is interrupted by Celery's soft time limit
    (the SDK wraps whatever its transport raises as APIConnectionError)."""
    def interrupted(request: httpx2.Request) -> httpx2.Response:
        raise SoftTimeLimitExceeded()

    return anthropic.Anthropic(api_key="sk-ant-test", base_url=FAKE.url, max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(
                                   interrupted)))


def test_a_soft_time_limit_in_the_call_is_recorded_as_a_time_limit(
        settings_env: Callable[..., None]) -> None:
    settings_env(**LOW)
    ids = seed("slow", 12)
    res = get_resources()
    assert isinstance(res.summarizer, ClaudeSummarizer)
    config = dataclasses.replace(res.summarizer.config, client=_time_limited_sdk())
    limited = res.with_summarizer(dataclasses.replace(res.summarizer, config=config))
    with pytest.raises(SoftTimeLimitExceeded):
        summarize("slow", job=Job(task_id="t-slow", final_attempt=False), res=limited)
    (run,) = runs("slow")
    assert run.status == "failed"  # transient: the retry may fit in time
    assert (run.error or "").startswith("SoftTimeLimitExceeded"), run.error
    assert "APIConnectionError" not in (run.error or "")
    assert message_ids("slow") == ids
