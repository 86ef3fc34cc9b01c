"""RecapSession with the real Agents SDK Runner, a fake Model that records its
input, a real Celery worker and the Messages API stand-in: a tool-using
conversation that folds at least twice."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from agents import Agent, ModelSettings, Runner, function_tool
from agents.items import ModelResponse, TResponseStreamEvent
from agents.models.interface import Model, ModelTracing
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from recap.errors import InvalidInput
from recap.integrations.openai_agents import RecapSession, to_turns
from tests.integrations.common import (
    THRESHOLDS,
    TURNS,
    applied,
    drain,
    keys,
    question,
    stored_total,
    summary,
)

pytestmark = pytest.mark.usefixtures("celery_worker_thread")
SYSTEM = "You are a weather assistant."


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city} (marker t{city.removeprefix('city-')}x)"


class ScriptedModel(Model):
    """Per user turn: a function call, then an answer; ``seen`` keeps each input."""

    def __init__(self) -> None:
        self.seen: list[list[dict[str, Any]]] = []

    async def get_response(self, system_instructions: str | None, input: Any,
                           model_settings: ModelSettings, tools: list[Any],
                           output_schema: Any, handoffs: list[Any], tracing: ModelTracing,
                           **kwargs: Any) -> ModelResponse:
        items = [dict(i) for i in input] if isinstance(input, list) else [
            {"role": "user", "content": input}]
        self.seen.append(items)
        n = len(self.seen) - 1
        turn = n // 2
        if n % 2 == 0:
            out: Any = ResponseFunctionToolCall(
                type="function_call", id=f"fc_{n}", call_id=f"call_{turn}", name="weather",
                arguments=f'{{"city": "city-{turn}"}}', status="completed")
        else:
            out = ResponseOutputMessage(
                type="message", id=f"msg_{n}", role="assistant", status="completed",
                content=[ResponseOutputText(
                    type="output_text", annotations=[],
                    text=f"Answer {turn}: sunny in city-{turn} (marker a{turn}x).")])
        return ModelResponse(output=[out], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the tests do not stream")


def assert_pairs_intact(items: list[dict[str, Any]]) -> None:
    called: set[str] = set()
    for item in items:
        if item.get("type") == "function_call":
            called.add(item["call_id"])
        if item.get("type") == "function_call_output":
            assert item["call_id"] in called, f"output {item['call_id']} without its call"
    outputs = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
    # Every call but the newest (still running) has its output.
    assert len(called - outputs) <= 1


def test_the_runner_reads_the_summary_after_two_folds(settings_env: Callable[..., None]) -> None:
    settings_env(**THRESHOLDS)
    sid = "oa-1"
    model = ScriptedModel()
    agent = Agent(name="weather", instructions=SYSTEM, model=model, tools=[weather])

    async def conversation() -> tuple[int, str]:
        from recap.api import aio

        session = RecapSession(sid)
        for i in range(TURNS):
            result = await Runner.run(agent, question(i), session=session)
            assert f"a{i}x" in result.final_output
            drain()
        first, before = len(model.seen), summary(sid)
        await Runner.run(agent, question(TURNS), session=session)
        drain()
        await aio.close()
        return first, before

    first, before = asyncio.run(conversation())
    assert applied(sid) >= 2
    sent = model.seen[first]
    assert sent[0]["role"] == "system" and before in sent[0]["content"]
    body = "\n".join(str(i.get("content", "")) + str(i.get("output", "")) for i in sent[1:])
    assert "q0x" not in body and "q1x" not in body and f"q{TURNS}x" in body
    for items in model.seen:
        assert_pairs_intact(items)
    # user, call, output, answer per turn: the call and the output are one message each
    assert stored_total(sid) == 4 * (TURNS + 1)


def test_items_handed_over_again_are_stored_once() -> None:
    sid = "oa-2"
    batch: list[Any] = [
        {"role": "user", "content": "weather in Lisbon?"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "weather",
         "arguments": '{"city": "Lisbon"}'},
        {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "weather",
         "arguments": "not json"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "function_call_output", "call_id": "c2", "output": "rain"},
        {"type": "message", "id": "msg_1", "role": "assistant",
         "content": [{"type": "output_text", "text": "Sunny.", "annotations": []}]},
    ]
    turns = to_turns(batch)
    assert [t.role for t in turns] == ["user", "assistant", "tool", "assistant"]
    assert isinstance(turns[1].content, list)
    assert turns[1].content[1]["input"] == {"arguments": "not json"}

    async def run() -> list[Any]:
        from recap.api import aio

        session = RecapSession(sid)
        await session.add_items(batch)
        await session.add_items(batch[1:])  # the model's items again: all skipped
        items = await session.get_items()
        limited = await session.get_items(limit=2)
        await aio.close()
        return [items, limited]

    items, limited = asyncio.run(run())
    assert stored_total(sid) == 4 and keys(sid) == 5
    assert [i.get("type", i.get("role")) for i in items] == [
        "user", "function_call", "function_call", "function_call_output",
        "function_call_output", "assistant"]
    assert limited == items[-1:]  # the newest two, less the output whose call was cut


def test_pop_item_removes_the_newest_message_and_clear_forgets() -> None:
    sid = "oa-3"

    async def run() -> tuple[Any, Any, list[Any], list[Any]]:
        from recap.api import aio

        session = RecapSession(sid)
        await session.add_items([{"role": "user", "content": "hi"},
                                 {"type": "message", "id": "m1", "role": "assistant",
                                  "content": [{"type": "output_text", "text": "hello"}]}])
        popped = await session.pop_item()
        # The popped reply may be stored again (its key went with it).
        await session.add_items([{"type": "message", "id": "m1", "role": "assistant",
                                  "content": [{"type": "output_text", "text": "hello"}]}])
        after = await session.get_items()
        again = await session.pop_item()
        await session.pop_item()
        empty = await session.pop_item()
        await session.clear_session()
        gone = await session.get_items()
        await aio.close()
        return popped, (again, empty), after, gone

    popped, (again, empty), after, gone = asyncio.run(run())
    assert popped == {"role": "assistant", "content": "hello"} == again
    assert after == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert empty is None and gone == []


def test_an_item_recap_cannot_store_is_refused_naming_it() -> None:
    with pytest.raises(InvalidInput, match="item 1: items of type 'web_search_call'"):
        to_turns([{"role": "user", "content": "x"}, {"type": "web_search_call", "id": "w"}])
