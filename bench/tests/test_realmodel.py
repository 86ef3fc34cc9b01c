"""The real-model benchmark's Messages API server, with a tiny fake model: how a
request becomes a chat completion and a completion a Messages API answer. No
model file and no llama-cpp-python needed."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from bench.realmodel import configured
from bench.realmodel.server import BadRequest, parse_request, serve

pytestmark = pytest.mark.system

TOOL = {"name": "record_summary", "description": "Record the summary.",
        "input_schema": {"type": "object", "properties": {"summary": {"type": "string"}},
                         "required": ["summary"]}}


class FakeLlama:
    """Answers every chat completion with ``text``; records what it was asked."""

    def __init__(self, text: str, finish: str = "stop") -> None:
        self.text, self.finish = text, finish
        self.calls: list[dict[str, Any]] = []

    def create_chat_completion(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        return {"choices": [{"message": {"role": "assistant", "content": self.text},
                             "finish_reason": self.finish}],
                "usage": {"prompt_tokens": 42, "completion_tokens": 7}}

    def count_prompt(self, messages: list[dict[str, str]]) -> int:
        """A tokenizer of one token per word."""
        self.calls.append({"counted": messages})
        return sum(len(m["content"].split()) for m in messages)


@pytest.fixture
def server() -> Iterator[tuple[Any, list[FakeLlama]]]:
    holder = [FakeLlama("")]

    class Proxy:
        def create_chat_completion(self, **kwargs: Any) -> Any:
            return holder[0].create_chat_completion(**kwargs)

        def count_prompt(self, messages: list[dict[str, str]]) -> int:
            return holder[0].count_prompt(messages)

    httpd = serve(Proxy(), model="tiny", host="127.0.0.1", port=0,
                  grammar_for=lambda schema: ("grammar", json.dumps(schema)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd, holder
    finally:
        httpd.shutdown()
        httpd.server_close()


def post(httpd: Any, body: Any, route: str = "/v1/messages") -> tuple[int, dict[str, Any]]:
    url = f"http://127.0.0.1:{httpd.server_address[1]}{route}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_text_request_is_a_chat_with_its_system_blocks(server: Any) -> None:
    httpd, holder = server
    holder[0] = FakeLlama("Hello.")
    status, answer = post(httpd, {"model": "tiny", "max_tokens": 20,
                                  "system": [{"type": "text", "text": "Be brief."}],
                                  "messages": [{"role": "user", "content": "Say hi"}]})
    assert status == 200
    assert answer["type"] == "message" and answer["stop_reason"] == "end_turn"
    assert answer["content"] == [{"type": "text", "text": "Hello."}]
    assert answer["usage"] == {"input_tokens": 42, "output_tokens": 7}
    call = holder[0].calls[0]
    assert call["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Say hi"}]
    # No sampling parameters sent: greedy decoding, and nothing refused.
    assert call["temperature"] == 0.0 and call["grammar"] is None and call["max_tokens"] == 20
    assert call["repeat_penalty"] > 1.0  # a small model's greedy answer loops without it


def test_a_forced_tool_is_generated_under_its_schema_and_answered_as_tool_use(
        server: Any) -> None:
    httpd, holder = server
    holder[0] = FakeLlama('{"summary": "The user booked TP1357."}')
    status, answer = post(httpd, {"model": "tiny", "max_tokens": 200, "tools": [TOOL],
                                  "tool_choice": {"type": "tool", "name": "record_summary"},
                                  "messages": [{"role": "user", "content": "Summarize"}]})
    assert status == 200 and answer["stop_reason"] == "tool_use"
    [block] = answer["content"]
    assert block["type"] == "tool_use" and block["name"] == "record_summary"
    assert block["input"] == {"summary": "The user booked TP1357."}
    call = holder[0].calls[0]
    assert call["grammar"] == ("grammar", json.dumps(TOOL["input_schema"]))
    assert "record_summary" in call["messages"][0]["content"]  # told which tool it answers


def test_a_tool_answer_cut_off_is_max_tokens_without_a_block(server: Any) -> None:
    httpd, holder = server
    holder[0] = FakeLlama('{"summary": "The user bo', finish="length")
    status, answer = post(httpd, {"model": "tiny", "max_tokens": 5, "tools": [TOOL],
                                  "tool_choice": {"type": "tool", "name": "record_summary"},
                                  "messages": [{"role": "user", "content": "Summarize"}]})
    assert status == 200 and answer["stop_reason"] == "max_tokens" and answer["content"] == []


def test_count_tokens_counts_the_prompt_messages_would_build(server: Any) -> None:
    """The same prompt as /v1/messages: the system with the forced tool's instruction,
    and no max_tokens needed; nothing is generated."""
    httpd, holder = server
    body = {"model": "tiny", "system": "Be brief.", "tools": [TOOL],
            "tool_choice": {"type": "tool", "name": "record_summary"},
            "messages": [{"role": "user", "content": "Summarize this please"}]}
    status, counted = post(httpd, body, "/v1/messages/count_tokens")
    assert status == 200
    [call] = holder[0].calls
    assert set(call) == {"counted"}  # counted, not completed
    assert call["counted"] == parse_request({**body, "max_tokens": 1}).messages
    assert counted == {"input_tokens": sum(len(m["content"].split()) for m in call["counted"])}
    status, error = post(httpd, {"model": "tiny", "messages": []}, "/v1/messages/count_tokens")
    assert status == 400 and "messages" in error["error"]["message"]


@pytest.mark.parametrize(("body", "problem"), [
    ({"messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
    ({"max_tokens": 5, "messages": []}, "messages"),
    ({"max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}, "role"),
    ({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tools": [TOOL],
      "tool_choice": {"type": "tool", "name": "other"}}, "not in tools"),
    ({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "temperature": -1},
     "temperature"),
])
def test_bad_requests_are_refused_naming_the_problem(body: dict[str, Any], problem: str) -> None:
    with pytest.raises(BadRequest, match=problem):
        parse_request(body)


def test_a_prompt_over_the_window_is_prompt_too_long(server: Any) -> None:
    httpd, holder = server

    class Full(FakeLlama):
        def create_chat_completion(self, **kwargs: Any) -> dict[str, Any]:
            raise ValueError("Requested tokens (9000) exceed context window of 8192")

    holder[0] = Full("")
    status, answer = post(httpd, {"model": "tiny", "max_tokens": 5,
                                  "messages": [{"role": "user", "content": "x"}]})
    assert status == 400 and "prompt is too long" in answer["error"]["message"]


def test_the_benchmark_skips_with_its_reason_without_a_model(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECAP_BENCH_MODELS", raising=False)
    models, reason = configured()
    assert models == [] and reason is not None and "RECAP_BENCH_MODELS" in reason
    monkeypatch.setenv("RECAP_BENCH_MODELS", "tiny=/nowhere/model.gguf")
    assert "no model file" in (configured()[1] or "")


@pytest.mark.parametrize("policy", ["threshold", "adaptive"])
def test_the_benchmarks_settings_are_accepted(policy: str) -> None:
    """The slow-model settings pass the settings' own bounds and cross-checks."""
    from bench.realmodel import overrides
    from recap.settings import load_settings

    settings = load_settings(**overrides("http://127.0.0.1:1", "tiny", policy=policy,
                                         mode="tool"))
    assert settings.llm_timeout_s <= 600 and settings.policy == policy


def test_the_conversations_size_is_read_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.realmodel import positive

    monkeypatch.delenv("RECAP_BENCH_MESSAGES", raising=False)
    assert positive("RECAP_BENCH_MESSAGES", 120) == 120
    monkeypatch.setenv("RECAP_BENCH_MESSAGES", "24")
    assert positive("RECAP_BENCH_MESSAGES", 120) == 24
    for bad in ("0", "-3", "twelve", "2.5"):
        monkeypatch.setenv("RECAP_BENCH_MESSAGES", bad)
        with pytest.raises(ValueError, match="RECAP_BENCH_MESSAGES=.* is not a positive"):
            positive("RECAP_BENCH_MESSAGES", 120)
