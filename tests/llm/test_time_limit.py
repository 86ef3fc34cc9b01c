"""Celery's soft time limit fired inside the HTTP call comes out of ``complete`` as
SoftTimeLimitExceeded, not as the APIConnectionError the SDK wraps it in: a
time limit is recorded as a time limit."""

from __future__ import annotations

import dataclasses
from typing import Any

import anthropic
import httpx2
import pytest
from celery.exceptions import SoftTimeLimitExceeded

from recap.errors import TransientLLMError
from recap.llm.client import ClientConfig, complete
from recap.settings import load_settings
from recap.worker.jobs.resources import build_resources
from tests.env import FAKE

pytestmark = pytest.mark.unit


def config_with(client: Any) -> ClientConfig:
    config = build_resources(load_settings()).client
    assert config is not None
    return dataclasses.replace(config, client=client)


class _Messages:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def create(self, **_: Any) -> Any:
        raise self.exc


class _Client:
    """Stands in for the SDK client: ``messages.create`` raises ``exc``."""

    def __init__(self, exc: BaseException) -> None:
        self.messages = _Messages(exc)
        self.api_key = "sk-ant-unit"


def _wrapped(cause: BaseException) -> anthropic.APIConnectionError:
    request = httpx2.Request("POST", f"{FAKE.url}/v1/messages")
    try:
        raise anthropic.APIConnectionError(request=request) from cause
    except anthropic.APIConnectionError as exc:
        return exc


def call(config: ClientConfig) -> None:
    complete(config, max_tokens=64, system="s", prompt="hello", operation="summarize")


def test_a_time_limit_wrapped_by_the_sdk_is_raised_as_a_time_limit() -> None:
    limit = SoftTimeLimitExceeded()
    with pytest.raises(SoftTimeLimitExceeded) as info:
        call(config_with(_Client(_wrapped(limit))))
    assert info.value is limit


def test_a_plain_connection_error_stays_transient() -> None:
    with pytest.raises(TransientLLMError, match="APIConnectionError"):
        call(config_with(_Client(_wrapped(ConnectionResetError("peer reset")))))


def test_the_real_sdk_interrupted_in_its_transport() -> None:
    def interrupted(request: httpx2.Request) -> httpx2.Response:
        raise SoftTimeLimitExceeded()

    sdk = anthropic.Anthropic(api_key="sk-ant-unit", base_url=FAKE.url, max_retries=0,
                              http_client=httpx2.Client(transport=httpx2.MockTransport(
                                  interrupted)))
    with pytest.raises(SoftTimeLimitExceeded):
        call(config_with(sdk))
