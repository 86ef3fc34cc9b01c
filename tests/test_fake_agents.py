"""The stand-in as an agent's model, through the real SDKs: only a forced tool gets
Recap's summary tool input; an agent's calls get the scripted assistant's replies
and tool calls, then plain text (never the same tool call forever); ``"stream":
true`` is answered with the Messages API's event stream; the OpenAI-compatible
route serves the OpenAI SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from recap.testing import FakeAnthropic, error, ok, tool_call

pytestmark = pytest.mark.unit

WEATHER = {"name": "weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}
ASK = [{"role": "user", "content": "Weather in Lisbon?"}]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic().start()
    yield server
    server.stop()


@pytest.fixture
def client(fake: FakeAnthropic) -> anthropic.Anthropic:
    fake.reset()
    return anthropic.Anthropic(base_url=fake.url, api_key="test", max_retries=0)


def create(client: anthropic.Anthropic, **kw: Any) -> Any:
    return client.messages.create(model="m", max_tokens=200, **{"messages": ASK, **kw})


def test_offered_tools_get_text_and_only_a_forced_tool_gets_recaps_input(
        client: anthropic.Anthropic) -> None:
    offered = create(client, tools=[WEATHER])
    assert offered.stop_reason == "end_turn"
    assert [b.type for b in offered.content] == ["text"]
    forced = create(client, tools=[WEATHER], tool_choice={"type": "tool", "name": "weather"})
    assert forced.stop_reason == "tool_use"
    assert forced.content[0].name == "weather" and "summary" in forced.content[0].input


def test_the_scripted_assistant_calls_tools_then_answers_and_recap_never_takes_its_turns(
        fake: FakeAnthropic, client: anthropic.Anthropic) -> None:
    fake.assistant(tool_call("weather", {"city": "Lisbon"}), ok("Sunny in Lisbon."))
    recap_call = create(client, tools=[WEATHER], tool_choice={"type": "tool", "name": "weather"})
    assert "summary" in recap_call.content[0].input  # the queue is the agent's
    first = create(client, tools=[WEATHER])
    assert first.stop_reason == "tool_use"
    call = first.content[0]
    assert (call.type, call.name, call.input) == ("tool_use", "weather", {"city": "Lisbon"})
    messages = [*ASK, {"role": "assistant", "content": [call.model_dump()]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                              "content": "sunny"}]}]
    second = create(client, tools=[WEATHER], messages=messages)
    assert (second.stop_reason, second.content[0].text) == ("end_turn", "Sunny in Lisbon.")
    third = create(client, tools=[WEATHER], messages=messages)  # the queue is used up
    assert third.stop_reason == "end_turn" and third.content[0].type == "text"


@pytest.mark.parametrize("reply", [ok("A streamed answer that takes several deltas."),
                                   tool_call("weather", {"city": "Lisbon, Portugal"},
                                             text="Let me look.")])
def test_a_streamed_answer_is_the_apis_event_sequence_and_the_same_message(
        fake: FakeAnthropic, client: anthropic.Anthropic, reply: Any) -> None:
    fake.assistant(reply, reply)
    plain = create(client, tools=[WEATHER])
    with client.messages.stream(model="m", max_tokens=200,
                                messages=ASK,  # type: ignore[arg-type]
                                tools=[WEATHER]) as stream:  # type: ignore[list-item]
        kinds = [event.type for event in stream]
        streamed = stream.get_final_message()
    assert [b.model_dump(exclude={"id"}) for b in streamed.content] == \
        [b.model_dump(exclude={"id"}) for b in plain.content]  # ids name the call
    assert streamed.stop_reason == plain.stop_reason
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "content_block_start" in kinds and "content_block_stop" in kinds
    assert "message_delta" in kinds
    assert kinds.count("content_block_delta") > len(plain.content)  # split into pieces


def test_the_openai_compatible_route_serves_the_openai_sdk(fake: FakeAnthropic) -> None:
    fake.reset()
    fake.assistant(tool_call("weather", {"city": "Lisbon"}), ok("Sunny in Lisbon."))
    client = openai.OpenAI(base_url=fake.url + "/v1/", api_key="test", max_retries=0)
    tools: Any = [{"type": "function", "function": {
        "name": "weather", "description": "The weather in a city.",
        "parameters": WEATHER["input_schema"]}}]
    messages: list[Any] = [{"role": "system", "content": "Be brief."},
                           {"role": "user", "content": "Weather in Lisbon?"}]
    first = client.chat.completions.create(model="m", messages=messages, tools=tools)
    assert first.choices[0].finish_reason == "tool_calls"
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert json.loads(call.function.arguments) == {"city": "Lisbon"}  # type: ignore[union-attr]
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
    second = client.chat.completions.create(model="m", messages=messages, tools=tools)
    assert second.choices[0].message.content == "Sunny in Lisbon."
    assert fake.requests[-1]["system"] == "Be brief."
    assert fake.requests[-1]["messages"][-1]["content"][0]["type"] == "tool_result"
    stream = client.chat.completions.create(model="m", messages=messages[:2], stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    fake.script(error(529, "Overloaded"))
    with pytest.raises(openai.APIStatusError, match="Overloaded"):
        client.chat.completions.create(model="m", messages=messages[:2])
