"""recap_history and store_messages with a real pydantic-ai Agent, a
FunctionModel that records its input, a real Celery worker and the Messages API
stand-in: a tool-using conversation that folds at least twice."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from recap.errors import InvalidInput
from recap.integrations.pydantic_ai import (
    astore_messages,
    recap_history,
    store_messages,
    to_turns,
)
from tests.integrations.common import (
    THRESHOLDS,
    TURNS,
    applied,
    drain,
    question,
    stored_total,
    summary,
)

pytestmark = pytest.mark.usefixtures("celery_worker_thread")
SYSTEM = "You are a weather assistant."


class Recorder:
    """A FunctionModel's function: per user turn a tool call, then the answer."""

    def __init__(self) -> None:
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        last = messages[-1]
        prompt = next((p.content for p in last.parts if isinstance(p, UserPromptPart)
                       and str(p.content).startswith("Question")), None) \
            if isinstance(last, ModelRequest) else None
        if isinstance(prompt, str):
            turn = prompt.split(":")[0].removeprefix("Question ")
            return ModelResponse(parts=[ToolCallPart("weather", {"city": f"city-{turn}"},
                                                     f"call_{turn}")])
        returned = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        turn = returned[0].tool_call_id.removeprefix("call_")
        return ModelResponse(parts=[TextPart(f"Answer {turn}: sunny (marker a{turn}x).")])


def _agent(sid: str, recorder: Recorder) -> Agent[None, str]:
    agent = Agent(FunctionModel(recorder), system_prompt=SYSTEM,
                  capabilities=[ProcessHistory(recap_history(sid))])

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city} (marker t{city.removeprefix('city-')}x)"

    return agent


def _text(messages: list[ModelMessage]) -> str:
    return "\n".join(str(getattr(p, "content", "")) + str(getattr(p, "args", ""))
                     for m in messages for p in m.parts)


def assert_pairs_intact(messages: list[ModelMessage]) -> None:
    called: set[str] = set()
    for m in messages:
        for p in m.parts:
            if isinstance(p, ToolCallPart):
                called.add(p.tool_call_id)
            if isinstance(p, ToolReturnPart):
                assert p.tool_call_id in called, f"return {p.tool_call_id} without its call"


def test_run_sync_reads_the_summary_after_two_folds(settings_env: Callable[..., None]) -> None:
    settings_env(**THRESHOLDS)
    sid = "pa-sync"
    recorder = Recorder()
    agent = _agent(sid, recorder)
    for i in range(TURNS):
        result = agent.run_sync(question(i))
        assert f"a{i}x" in result.output
        store_messages(sid, result.new_messages())
        store_messages(sid, result.all_messages())  # again, and the context: stored once
        drain()
    assert applied(sid) >= 2
    first, before = len(recorder.seen), summary(sid)
    result = agent.run_sync(question(TURNS))
    store_messages(sid, result.new_messages())
    drain()
    sent = recorder.seen[first]
    system = [p.content for m in sent for p in m.parts if isinstance(p, SystemPromptPart)]
    assert SYSTEM in system and any(before in s for s in system)
    body = _text([m for m in sent if not any(isinstance(p, SystemPromptPart) for p in m.parts)]
                 ) + str(next(p.content for p in sent[-1].parts if isinstance(p, UserPromptPart)))
    assert "q0x" not in body and "q1x" not in body and f"q{TURNS}x" in body
    for call in recorder.seen:
        assert_pairs_intact(call)
    assert stored_total(sid) == 4 * (TURNS + 1)


def test_async_runs_store_with_the_asyncio_api(settings_env: Callable[..., None]) -> None:
    settings_env(**THRESHOLDS)
    sid = "pa-async"
    recorder = Recorder()
    agent = _agent(sid, recorder)

    async def conversation() -> None:
        from recap.api import aio

        for i in range(TURNS):
            result = await agent.run(question(i))
            await astore_messages(sid, result.new_messages())
            await astore_messages(sid, result.new_messages())  # a retried store
            drain()
        await aio.close()

    asyncio.run(conversation())
    assert applied(sid) >= 2
    assert stored_total(sid) == 4 * TURNS
    sent = recorder.seen[-1]
    assert "q0x" not in _text(sent[1:])
    for call in recorder.seen:
        assert_pairs_intact(call)


def test_a_part_recap_cannot_store_is_refused_naming_it() -> None:
    from pydantic_ai.messages import BinaryContent

    image = BinaryContent(b"x", media_type="image/png")
    bad = ModelRequest(parts=[UserPromptPart(["look", image])])
    with pytest.raises(InvalidInput, match="message 0 part 0 \\(UserPromptPart\\)"):
        to_turns([bad])
