"""The public test double takes every block type of today's replies back in a
request, sent through the real SDK, and refuses what the API refuses: a server
tool result without its call, a compaction anywhere but first, an unknown type."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from recap.testing import FakeAnthropic, validate_messages_request
from tests.server_blocks import (
    FUTURE,
    compaction,
    mcp_reply,
    tools_reply,
    web_search_reply,
)

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic().start()
    yield server
    server.stop()


def conversation() -> list[dict[str, Any]]:
    found = {"type": "search_result", "source": "https://kb.example/1", "title": "Trams",
             "content": [{"type": "text", "text": "Tram 28 runs every 10 minutes."}]}
    return [{"role": "assistant", "content": [compaction()]},
            {"role": "user", "content": [found, {"type": "text", "text": "Weather?"}]},
            {"role": "assistant", "content": web_search_reply() + tools_reply()},
            {"role": "user", "content": "And my evening?"},
            {"role": "assistant", "content": mcp_reply()},
            {"role": "user", "content": "Thanks"}]


def test_every_block_type_goes_back_through_the_sdk(fake: FakeAnthropic) -> None:
    fake.reset()
    client = anthropic.Anthropic(base_url=fake.url, api_key="test", max_retries=0)
    reply = client.beta.messages.create(model="m", max_tokens=50, messages=conversation())  # type: ignore[arg-type]
    assert reply.content and fake.requests[-1]["messages"] == conversation()


def body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 8, "messages": messages}


@pytest.mark.parametrize(("messages", "says"), [
    ([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": web_search_reply()[2:]}],
     "`web_search_tool_result` block with tool_use_id srvtoolu_ws1 has no corresponding"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": mcp_reply()[:1]},
      {"role": "user", "content": "ok"}],
     "server tool use ids were found without result blocks in the same message: mcptoolu_1"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [compaction()]}],
     "messages.1.content.0: the compaction block must be the first block"),
    ([{"role": "assistant", "content": [{"type": "text", "text": "x"}, compaction()]}],
     "first message must use the \"user\" role"),
    ([{"role": "user", "content": [dict(FUTURE)]}], "Input tag 'hologram' does not match"),
    ([{"role": "user", "content": [web_search_reply()[1]]}],
     "server_tool_use blocks are not allowed here"),
])
def test_what_the_api_refuses_is_refused(messages: list[dict[str, Any]], says: str) -> None:
    problem = validate_messages_request(body(messages))
    assert problem is not None and says in problem, problem
