"""A total deadline per Claude call: the SDK's timeout bounds each socket read, so a
server that trickles its answer a byte at a time is cut off by the deadline
(recap.llm.deadline), and the overrun is a transient error."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from recap.errors import TransientLLMError
from recap.llm.client import ClientConfig, complete
from recap.llm.deadline import call_within
from recap.settings import load_settings
from recap.testing import FakeAnthropic, ok
from recap.worker.jobs.resources import build_resources


def config(timeout_s: float) -> ClientConfig:
    client = build_resources(load_settings(llm_timeout_s=timeout_s)).client
    assert client is not None
    return dataclasses.replace(client, timeout_s=timeout_s)


def call(timeout_s: float) -> str:
    return complete(config(timeout_s), max_tokens=64, system="s", prompt="hello",
                    operation="summarize").text


@pytest.mark.unit
def test_call_within_hands_back_the_result_or_the_error_of_the_call() -> None:
    assert call_within(lambda: 42, 5) == 42

    def boom() -> int:
        raise ValueError("from the call")

    with pytest.raises(ValueError, match="from the call"):
        call_within(boom, 5)


@pytest.mark.unit
def test_call_within_runs_the_call_with_the_callers_context_variables() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("the caller's")
    assert call_within(var.get, 5) == "the caller's"


@pytest.mark.unit
def test_call_within_gives_up_at_the_deadline_and_says_so() -> None:
    never = threading.Event()
    try:
        with pytest.raises(TransientLLMError, match="total deadline of 0.2s"):
            call_within(never.wait, 0.2, what="the summarize call")
    finally:
        never.set()


def test_a_trickling_server_is_cut_off_at_the_total_deadline(fake_api: FakeAnthropic) -> None:
    # A byte every 20 ms: no read ever waits near the 0.5 s read timeout, so only
    # a total deadline can end the call; the answer takes ~10 s to trickle out.
    fake_api.trickle(0.02)
    with pytest.raises(TransientLLMError, match="Timeout: the summarize call did not finish "
                                                "within its total deadline of 0.5s"):
        call(0.5)
    assert len(fake_api.requests) == 1  # sent once: retrying is Celery's job
    assert fake_api.trickles_finished == 0  # the server was still sending


@pytest.mark.unit
def test_a_scripted_reply_can_trickle_and_a_patient_call_gets_all_of_it(
        fake_api: FakeAnthropic) -> None:
    # The stand-in's trickle is a real HTTP answer, only slow: with time enough
    # (a tiny answer, 1 ms a byte) the SDK parses it like any other.
    fake_api.script(ok("A short summary.", trickle=0.001))
    assert call(20) == "A short summary."
    assert fake_api.trickles_finished == 1
