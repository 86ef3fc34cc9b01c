"""A failed model call stores nothing, in every adapter: each framework's real
Anthropic-compatible model talks to the Messages API stand-in, which fails the
agent's call (after a tool step, so the run had stored nothing yet by then
either); running the same turn again stores the user's message once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from recap.testing import FakeAnthropic, error, ok, tool_call
from tests.integrations.common import active_texts, question, stored_total

pytestmark = pytest.mark.usefixtures("celery_worker_thread")
MODEL = "claude-sonnet-5-5"
KEY = "stand-in"


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _fail_then_answer(fake: FakeAnthropic) -> None:
    """The first run: a tool call, then a failed call. The second: the whole turn."""
    fake.assistant(tool_call("weather", {"city": "city-0"}), error(400, "scripted failure"),
                   tool_call("weather", {"city": "city-0"}), ok("Sunny in city-0."))


def _stored_once(sid: str, messages: int) -> None:
    assert stored_total(sid) == messages
    assert sum("q0x" in text for text in active_texts(sid)) == 1


def test_langchain_middleware(fake_api: FakeAnthropic) -> None:
    from langchain.agents import create_agent
    from langchain_anthropic import ChatAnthropic
    from langchain_core.tools import tool

    from recap.integrations.langchain_middleware import RecapMiddleware

    sid = "fail-lc"
    model = ChatAnthropic(model_name=MODEL, base_url=fake_api.url, api_key=KEY,  # type: ignore[arg-type]
                          max_retries=0, timeout=30, stop=None)
    agent = create_agent(model, [tool(weather)], middleware=[RecapMiddleware(sid)])
    _fail_then_answer(fake_api)
    turn: Any = {"messages": [{"role": "user", "content": question(0)}]}
    with pytest.raises(Exception, match="scripted failure"):
        agent.invoke(turn)
    assert stored_total(sid) == 0
    agent.invoke(turn)  # without a checkpointer, the app sends the turn again
    _stored_once(sid, 4)  # the question, the tool call, its result, the answer


def test_openai_agents_session(fake_api: FakeAnthropic) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
    from openai import AsyncOpenAI

    from recap.api import aio
    from recap.integrations.openai_agents import RecapSession

    sid = "fail-oa"
    client = AsyncOpenAI(api_key=KEY, base_url=fake_api.url + "/v1/", max_retries=0)
    agent = Agent(name="weather", model=OpenAIChatCompletionsModel(model=MODEL,
                                                                   openai_client=client),
                  tools=[function_tool(weather)])
    _fail_then_answer(fake_api)

    async def runs() -> None:
        with pytest.raises(Exception, match="scripted failure"):
            await Runner.run(agent, question(0), session=RecapSession(sid))
        assert await asyncio.to_thread(stored_total, sid) == 0
        await Runner.run(agent, question(0), session=RecapSession(sid))
        await aio.close()

    asyncio.run(runs())
    _stored_once(sid, 4)


def test_pydantic_ai(fake_api: FakeAnthropic) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    from recap.integrations.pydantic_ai import recap_history, store_messages

    sid = "fail-pa"
    model = AnthropicModel(MODEL, provider=AnthropicProvider(api_key=KEY,
                                                             base_url=fake_api.url))
    agent: Agent[None, str] = Agent(model, tools=[weather],
                                    capabilities=[ProcessHistory(recap_history(sid))])
    _fail_then_answer(fake_api)
    with pytest.raises(Exception, match="scripted failure"):
        result: Any = agent.run_sync(question(0))
        store_messages(sid, result.new_messages())
    assert stored_total(sid) == 0
    result = agent.run_sync(question(0))
    store_messages(sid, result.new_messages())
    _stored_once(sid, 4)


def test_langchain_chat_history(fake_api: FakeAnthropic) -> None:
    import warnings

    from langchain_anthropic import ChatAnthropic
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory

    from recap.integrations.langchain import RecapChatMessageHistory

    sid = "fail-history"
    model = ChatAnthropic(model_name=MODEL, base_url=fake_api.url, api_key=KEY,  # type: ignore[arg-type]
                          max_retries=0, timeout=30, stop=None)
    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"),
                                               ("human", "{question}")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # it warns that it is deprecated
        chat = RunnableWithMessageHistory(prompt | model, RecapChatMessageHistory,
                                          input_messages_key="question",
                                          history_messages_key="history")
    fake_api.assistant(error(400, "scripted failure"), ok("Sunny in city-0."))
    config: Any = {"configurable": {"session_id": sid}}
    with pytest.raises(Exception, match="scripted failure"):
        chat.invoke({"question": question(0)}, config)
    assert stored_total(sid) == 0
    chat.invoke({"question": question(0)}, config)
    _stored_once(sid, 2)
