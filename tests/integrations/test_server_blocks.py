"""A window holding Claude's server-tool blocks (web search and fetch, code
execution, MCP) reaches the Agents SDK and pydantic-ai as the assistant's text
only: the server-tool blocks are skipped (docs/INTEGRATIONS.md says why), never
sent as function calls, never an error."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

import recap
from recap.integrations.openai_agents import to_items
from recap.integrations.pydantic_ai import from_context
from tests.server_blocks import mcp_reply, tools_reply, web_search_reply

pytestmark = pytest.mark.usefixtures("clean")
REPLIES = [web_search_reply(), tools_reply(), mcp_reply()]


def window(sid: str) -> recap.api.context.Context:
    for reply in REPLIES:
        recap.add_message(sid, "user", "Look it up, please.")
        recap.add_message(sid, "assistant", reply)
    return recap.build_context(sid, system_prompt="", prompt_caching=False)


def texts() -> list[str]:
    return ["".join(b["text"] for b in reply if b["type"] == "text") for reply in REPLIES]


def test_the_agents_sdk_gets_the_assistants_text_of_each_reply() -> None:
    items = to_items(window("oa-server-blocks"))
    said = [i["content"] for i in items if i.get("role") == "assistant"]
    assert said == texts()
    assert not any(i.get("type") for i in items), json.dumps(items)[:500]


def test_pydantic_ai_gets_the_assistants_text_of_each_reply() -> None:
    messages = from_context(window("pa-server-blocks"))
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    assert [[type(p) for p in m.parts] for m in responses] == [[TextPart]] * len(REPLIES)
    assert ["".join(p.content for p in m.parts if isinstance(p, TextPart))
            for m in responses] == texts()
    assert not any(isinstance(p, ToolCallPart) for m in responses for p in m.parts)
