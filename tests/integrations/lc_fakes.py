"""A LangChain chat model that records what it is sent: the real
GenericFakeChatModel, with tools bound as a no-op and scripted failures."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool
from pydantic import Field

from tests.integrations.common import question


class RecordingChatModel(GenericFakeChatModel):
    """Answers from ``messages``; ``seen`` holds each call's input; the calls whose
    index is in ``fail_at`` raise first (a transient model error)."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)
    fail_at: set[int] = Field(default_factory=set)

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
                   *, tool_choice: str | None = None, **kwargs: Any
                   ) -> Runnable[LanguageModelInput, AIMessage]:
        return self  # answers are scripted: the tools change nothing

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        call = len(self.seen)
        self.seen.append(list(messages))
        if call in self.fail_at:
            raise ConnectionError(f"scripted failure of model call {call}")
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city} (marker t{city.removeprefix('city-')}x)"


def script(turns: int) -> list[AIMessage]:
    """Per turn: a tool call, then the answer."""
    out: list[AIMessage] = []
    for i in range(turns):
        out.append(AIMessage(content="", tool_calls=[
            {"name": "weather", "args": {"city": f"city-{i}"}, "id": f"call_{i}"}]))
        out.append(AIMessage(content=f"Answer {i}: it is sunny in city-{i} (marker a{i}x)."))
    return out


def assert_pairs_intact(messages: Sequence[BaseMessage]) -> None:
    """Each tool call is followed by its results, and each result follows its call."""
    open_calls: set[str] = set()
    for m in messages:
        if isinstance(m, ToolMessage):
            assert m.tool_call_id in open_calls, f"result {m.tool_call_id} without its call"
            open_calls.discard(m.tool_call_id)
            continue
        assert not open_calls, f"calls {open_calls} without their results"
        if isinstance(m, AIMessage):
            open_calls = {c["id"] for c in m.tool_calls if c["id"]}
    assert not open_calls, f"calls {open_calls} without their results"


__all__ = ["RecordingChatModel", "assert_pairs_intact", "question", "script", "weather"]
