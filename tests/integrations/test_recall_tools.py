"""The recall tool of each adapter, offered to a real framework agent whose model is
the Messages API stand-in (Anthropic's SDK, or its OpenAI-compatible route): the
model calls it by a stub's tool_use id, by another session's message id and with
a query of operators only, and reads the archived original under its label, then
two short errors; never another session's text, never an exception in the loop."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import recap
from recap.db import transaction, utcnow
from recap.models import ArchivedMessage
from recap.testing import FakeAnthropic, ok, recap_kind, tool_call

pytestmark = pytest.mark.usefixtures("celery_worker_thread")

LOG = ("collected 40 items\nERROR LGR-3621 raised at:\n  src/ledger/loader.py:212\n"
       "teardown ok")
OTHER = LOG.replace("LGR-3621", "LGR-9999")
NAME = "recap_recall"


def archived(sid: str, msg_id: int, text: str, tool_use_id: str) -> None:
    """A session with one archived tool result, as a fold or a clear leaves it."""
    recap.add_message(sid, "user", "Hello")
    with transaction() as s:
        s.add(ArchivedMessage(id=msg_id, session_id=sid, role="tool", token_count=20, run_id=1,
                              created_at=utcnow(), content=text,
                              tool_links=f"result:{tool_use_id}"))


def script(fake: FakeAnthropic, sid: str) -> None:
    """Our session and another's, and the model's three calls of the tool."""
    archived(sid, 1, LOG, "toolu_old1")
    archived(f"{sid}-other", 2, OTHER, "toolu_old2")
    fake.assistant(tool_call(NAME, {"tool_use_id": "toolu_old1"}),
                   tool_call(NAME, {"message_id": 2}),
                   tool_call(NAME, {"query": "a & !b | (c:*)"}), ok("Found it."))


def results(fake: FakeAnthropic) -> list[str]:
    """The tool results the model was sent on its last call, in order."""
    last = [r for r in fake.requests if recap_kind(r) is None][-1]
    assert any(t["name"] == NAME for t in last.get("tools", [])), last.get("tools")
    out = []
    for m in last["messages"]:
        for b in m["content"] if isinstance(m["content"], list) else []:
            if b["type"] == "tool_result":
                inner = b["content"]
                out.append(inner if isinstance(inner, str) else
                           "".join(p.get("text", "") for p in inner))
    return out


def assert_answers(found: list[str]) -> None:
    recalled, other, operators = found[-3:]
    assert recalled.startswith("Recalled from this conversation's archive")
    assert "- [tool result · message 1 · " in recalled
    assert "  ERROR LGR-3621 raised at:\n    src/ledger/loader.py:212" in recalled
    assert "LGR-9999" not in "".join(found)  # another session's text: never an answer
    assert other.startswith("Recall failed:") and "holds no message 2" in other
    assert operators.startswith("Recall failed:") and "names nothing" in operators


def test_langchain_middleware_offers_the_tool(fake_api: FakeAnthropic) -> None:
    from langchain.agents import create_agent
    from langchain_anthropic import ChatAnthropic
    from langgraph.checkpoint.memory import InMemorySaver
    from pydantic import SecretStr

    from recap.integrations.langchain_middleware import RecapMiddleware

    script(fake_api, "lc-recall")
    model = ChatAnthropic(model_name="claude-test", base_url=fake_api.url,
                          api_key=SecretStr("test"), timeout=30, stop=None)
    agent = create_agent(model, [], middleware=[RecapMiddleware(recall_tool=True)],
                         checkpointer=InMemorySaver())
    reply = agent.invoke({"messages": [{"role": "user", "content": "Where was it raised?"}]},
                         {"configurable": {"thread_id": "lc-recall"}})
    assert reply["messages"][-1].text == "Found it."
    assert_answers(results(fake_api))


def test_openai_agents_session_offers_the_tool(fake_api: FakeAnthropic) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, Runner
    from openai import AsyncOpenAI

    from recap.integrations.openai_agents import RecapSession

    script(fake_api, "oa-recall")
    client = AsyncOpenAI(api_key="test", base_url=fake_api.url + "/v1/")
    model = OpenAIChatCompletionsModel(model="claude-test", openai_client=client)

    async def run() -> Any:
        session = RecapSession("oa-recall")
        agent = Agent(name="a", instructions="Help.", model=model,
                      tools=[session.recall_tool()])
        try:
            return await Runner.run(agent, "Where was it raised?", session=session)
        finally:
            await recap.aio.close()

    assert asyncio.run(run()).final_output == "Found it."
    assert_answers(results(fake_api))


def test_pydantic_ai_tool(fake_api: FakeAnthropic) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    from recap.integrations.pydantic_ai import recall_tool, recap_history

    script(fake_api, "pa-recall")
    model = AnthropicModel("claude-test", provider=AnthropicProvider(api_key="test",
                                                                      base_url=fake_api.url))
    agent = Agent(model, tools=[recall_tool("pa-recall")],
                  capabilities=[ProcessHistory(recap_history("pa-recall"))])
    assert agent.run_sync("Where was it raised?").output == "Found it."
    assert_answers(results(fake_api))


def test_langchain_async_runs_the_tool_on_the_asyncio_api(fake_api: FakeAnthropic) -> None:
    from langchain.agents import create_agent
    from langchain_anthropic import ChatAnthropic
    from langgraph.checkpoint.memory import InMemorySaver
    from pydantic import SecretStr

    from recap.integrations.langchain_middleware import RecapMiddleware

    script(fake_api, "lc-arecall")
    model = ChatAnthropic(model_name="claude-test", base_url=fake_api.url,
                          api_key=SecretStr("test"), timeout=30, stop=None)
    agent = create_agent(model, [], middleware=[RecapMiddleware(recall_tool="lookup_archive")],
                         checkpointer=InMemorySaver())
    fake_api.reset()
    fake_api.assistant(tool_call("lookup_archive", {"tool_use_id": "toolu_old1"}), ok("Found."))

    async def run() -> Any:
        try:
            return await agent.ainvoke(
                {"messages": [{"role": "user", "content": "Where was it raised?"}]},
                {"configurable": {"thread_id": "lc-arecall"}})
        finally:
            await recap.aio.close()

    assert asyncio.run(run())["messages"][-1].text == "Found."
    last = [r for r in fake_api.requests if recap_kind(r) is None][-1]
    assert [t["name"] for t in last["tools"]] == ["lookup_archive"]
    assert "ERROR LGR-3621 raised at:" in json.dumps(last["messages"])


def test_inside_a_tenant_the_tool_reads_the_tenants_ids_only(fake_api: FakeAnthropic) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    from recap.integrations.pydantic_ai import recall_tool

    archived("pa-tenant", 1, LOG, "toolu_old1")  # outside any tenant
    fake_api.assistant(tool_call(NAME, {"tool_use_id": "toolu_old1"}), ok("Done."))
    model = AnthropicModel("claude-test", provider=AnthropicProvider(api_key="test",
                                                                      base_url=fake_api.url))
    agent = Agent(model, tools=[recall_tool("pa-tenant")])
    with recap.tenant("acme"):
        assert agent.run_sync("Where was it raised?").output == "Done."
    [found] = results(fake_api)
    assert found.startswith("Recall failed: no chat session") and "LGR-3621" not in found
