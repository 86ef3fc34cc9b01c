"""The Claude edge's error judgement: ``classify`` and ``retry_after``, through the real
SDK against the local API server (headers as the API sends them), and on plain values."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from recap.errors import (
    LLMError,
    PermanentLLMError,
    PromptTooLong,
    TransientLLMError,
    UnusableSummary,
)
from recap.llm.client import ClientConfig, classify, complete, retry_after
from recap.settings import load_settings
from recap.testing import FakeAnthropic, Reply, error
from recap.worker.jobs.resources import build_resources
from tests.env import API_KEY


def config() -> ClientConfig:
    client = build_resources(load_settings()).client
    assert client is not None
    return client


def fail(fake_api: FakeAnthropic, reply: Reply) -> LLMError:
    """The classified error one call raises when the server answers ``reply``."""
    fake_api.script(reply)
    with pytest.raises(LLMError) as info:
        complete(config(), max_tokens=64, system="s", prompt="hello", operation="summarize")
    assert len(fake_api.requests) == 1  # max_retries=0: the SDK never retries on its own
    assert API_KEY not in str(info.value)
    return info.value


# -- x-should-retry: the server's word wins over the status code ------------------

@pytest.mark.parametrize("status", [400, 403, 404])
def test_should_retry_true_makes_a_client_error_transient(fake_api: FakeAnthropic,
                                                          status: int) -> None:
    exc = fail(fake_api, error(status, headers={"x-should-retry": "true",
                                                "retry-after": "4"}))
    assert type(exc) is TransientLLMError
    assert exc.status == status and exc.retry_after == 4.0


@pytest.mark.parametrize("status", [503, 429, 529, 500, 408])
def test_should_retry_false_makes_a_server_error_permanent(fake_api: FakeAnthropic,
                                                           status: int) -> None:
    exc = fail(fake_api, error(status, headers={"x-should-retry": "false",
                                                "retry-after": "4"}))
    assert type(exc) is PermanentLLMError
    assert exc.status == status


def test_should_retry_is_read_case_insensitively(fake_api: FakeAnthropic) -> None:
    assert type(fail(fake_api, error(400, headers={"X-Should-Retry": "True"}))) \
        is TransientLLMError


def test_without_the_header_the_status_decides(fake_api: FakeAnthropic) -> None:
    assert type(fail(fake_api, error(503))) is TransientLLMError
    fake_api.reset()
    assert type(fail(fake_api, error(400))) is PermanentLLMError


def test_prompt_too_long_stays_prompt_too_long_whatever_the_header(
        fake_api: FakeAnthropic) -> None:
    # The summarizer shrinks its chunk on PromptTooLong; a retry of the same
    # request would fail the same way.
    exc = fail(fake_api, error(400, "prompt is too long: 9000 tokens > 8000 maximum",
                               headers={"x-should-retry": "true"}))
    assert type(exc) is PromptTooLong


# -- retry-after, as the SDK receives it -------------------------------------------

def test_retry_after_as_an_http_date(fake_api: FakeAnthropic) -> None:
    when = datetime.now(UTC) + timedelta(seconds=120)
    exc = fail(fake_api, error(429, headers={"retry-after": format_datetime(when, usegmt=True)}))
    assert isinstance(exc, TransientLLMError) and exc.retry_after is not None
    # An HTTP date has whole seconds: up to one lost to truncation, plus the call.
    assert exc.retry_after == pytest.approx(120, abs=5)


def test_retry_after_ms_wins_over_retry_after(fake_api: FakeAnthropic) -> None:
    exc = fail(fake_api, error(529, headers={"retry-after-ms": "1500", "retry-after": "9"}))
    assert isinstance(exc, TransientLLMError) and exc.retry_after == 1.5


@pytest.mark.parametrize("value", ["soon", "", "inf", "nan", "Tomorrow at noon"])
def test_garbage_retry_after_is_none(fake_api: FakeAnthropic, value: str) -> None:
    exc = fail(fake_api, error(503, headers={"retry-after": value}))
    assert isinstance(exc, TransientLLMError) and exc.retry_after is None


# -- retry_after on plain values ---------------------------------------------------

NOW = 1_800_000_000.0  # a fixed "now", so no clock is read


def http_date(offset_s: float, *, usegmt: bool = True) -> str:
    when = datetime.fromtimestamp(NOW + offset_s, UTC)
    return format_datetime(when if usegmt else when.replace(tzinfo=None), usegmt=usegmt)


@pytest.mark.unit
@pytest.mark.parametrize(("headers", "expected"), [
    ({"retry-after": "7"}, 7.0),
    ({"retry-after": "2.5"}, 2.5),
    ({"retry-after": "-3"}, 0.0),
    ({"retry-after-ms": "250"}, 0.25),
    ({"retry-after-ms": "soon", "retry-after": "3"}, 3.0),  # a bad -ms falls back
    ({"retry-after": http_date(30)}, 30.0),
    ({"retry-after": http_date(-30)}, 0.0),  # already past
    ({"retry-after": "Mon, 99 Foo 2026 99:99:99 GMT"}, None),
    ({"retry-after": "soon"}, None),
    ({"retry-after": "1e999"}, None),
    ({}, None),
])
def test_retry_after_values(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after(headers, now=NOW) == expected


@pytest.mark.unit
def test_retry_after_without_headers() -> None:
    assert retry_after(None) is None


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local time zone is not UTC for the test."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.unit
@pytest.mark.usefixtures("new_york")
def test_an_http_date_is_gmt_even_without_a_zone() -> None:
    # "-0000" (no zone information) is still GMT, never the machine's local time.
    assert http_date(30, usegmt=False).endswith("-0000")
    assert retry_after({"retry-after": http_date(30, usegmt=False)}, now=NOW) == 30.0
    assert retry_after({"retry-after": http_date(30)}, now=NOW) == 30.0


# -- classify on plain values ------------------------------------------------------

@pytest.mark.unit
def test_an_llm_error_is_returned_as_is() -> None:
    exc = UnusableSummary("empty")
    assert classify(exc) is exc


@pytest.mark.unit
def test_other_exceptions_are_not_classified() -> None:
    assert classify(KeyError("x")) is None
    assert classify(RuntimeError("boom")) is None


@pytest.mark.unit
def test_a_json_decode_error_of_our_own_is_not_an_api_failure() -> None:
    # Only complete() maps the SDK's JSON errors (a malformed body) to
    # TransientLLMError; one raised by Recap's own code must stay what it is.
    try:
        json.loads("{")
    except json.JSONDecodeError as exc:
        assert classify(exc) is None
