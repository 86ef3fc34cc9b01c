"""Every block type of the Messages API's replies (server tools, MCP, compaction,
citations, a type added later) built with the SDK's own types: stored as it
came, in order, rendered as short text without encrypted payloads, refused with
the field named when malformed (pure)."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
import typing_extensions

from recap.api.validate import prepare_message
from recap.core.content import blocks as vendored
from recap.core.content.message import MAX_CONTENT_CHARS
from recap.core.content.render import TAIL_CHARS, full_text, parse_links
from recap.errors import InvalidInput
from tests.sdk_request import sdk_problem
from tests.server_blocks import (
    ENCRYPTED,
    FUTURE,
    SIGNATURE,
    SUMMARY,
    as_stored,
    compaction,
    every_block,
    mcp_reply,
    tools_reply,
    web_search_reply,
)

pytestmark = pytest.mark.unit


def prepare(role: str, content: Any) -> Any:
    return prepare_message(role, content, False, max_inline_chars=10**6)


def test_every_block_of_a_reply_is_stored_as_it_came_in_order() -> None:
    reply = every_block()
    msg = prepare("assistant", reply)
    assert msg.blocks == as_stored(reply)
    assert [b["type"] for b in msg.blocks] == [b["type"] for b in reply]
    # Each block's keys in the order the app gave them; the compaction's exactly.
    assert [list(b) for b in msg.blocks] == [list(b) for b in as_stored(reply)]
    assert json.dumps(msg.blocks[0]) == json.dumps(compaction())
    # What the SDK's own request types take back.
    assert sdk_problem({"messages": [{"role": "assistant", "content": msg.blocks[:-1]}]},
                       beta=True) is None


def test_a_compaction_without_summary_keeps_its_nulls() -> None:
    block = compaction(None)
    assert block["content"] is None
    assert prepare("assistant", [block]).blocks == [block]
    assert "[compaction: no summary]" in prepare("assistant", [block]).content


def test_a_future_block_type_is_kept_whole_and_bounded() -> None:
    msg = prepare("user", [{"type": "text", "text": "Look"}, dict(FUTURE)])
    assert msg.blocks == [{"type": "text", "text": "Look"}, FUTURE]
    assert msg.content == "Look\n[hologram block]"
    assert "AAEC" in msg.countable  # counted: it is sent back whole
    huge = {"type": "hologram", "frames": "A" * (MAX_CONTENT_CHARS + 1)}
    with pytest.raises(InvalidInput, match="content holds .* characters of text"):
        prepare("user", [huge])


def test_the_summarizer_sees_short_text_and_never_a_payload() -> None:
    reply = every_block()
    for text in (prepare("assistant", reply).content, full_text(as_stored(reply))):
        assert ENCRYPTED not in text and SIGNATURE not in text
        assert f"[compaction summary: {SUMMARY}]" in text
        assert ("[web search result for srvtoolu_ws1: Lisbon climate "
                "<https://weather.example/lisbon>; May in Portugal "
                "<https://travel.example/may>]") in text
        assert "around 22C. [cited: Lisbon climate <https://weather.example/lisbon>]" in text
        assert ("[web fetch result for srvtoolu_wf: https://guide.example/lisbon, "
                '"Lisbon guide"\nTrams run until midnight.]') in text
        assert "[code execution result for srvtoolu_py: return code 0\nstdout: 71.6]" in text
        assert ("[bash code execution result for srvtoolu_sh: return code 2\n"
                "stderr: ls: cannot access '/data']") in text
        assert "[tool search result for srvtoolu_ts: tools get_forecast]" in text
        assert ('[MCP tool call calendar/list_events (mcptoolu_1): {"day": "2026-05-04"}]'
                in text)
        assert "[MCP tool result for mcptoolu_1: Dinner at 8pm with Ana]" in text
        assert "[container upload: file file_up1]" in text
        assert "[hologram block]" in text


def test_a_long_stdout_shows_its_tail() -> None:
    reply = tools_reply()
    reply[3]["content"]["stdout"] = "start " + "x" * 5_000 + " the answer is 42"
    text = prepare("assistant", reply).content
    assert "the answer is 42" in text and "start " not in text
    assert f"[... {5_000 + 6 + 17 - TAIL_CHARS} characters left out ...]" in text


def test_server_and_mcp_calls_are_linked_to_their_results() -> None:
    msg = prepare("assistant", web_search_reply() + mcp_reply())
    assert parse_links(msg.tool_links) == (("srvtoolu_ws1", "mcptoolu_1"),
                                           ("srvtoolu_ws1", "mcptoolu_1"))


def test_search_results_are_taken_in_user_turns_and_tool_results() -> None:
    found = {"type": "search_result", "source": "https://kb.example/1", "title": "Trams",
             "content": [{"type": "text", "text": "Tram 28 runs every 10 minutes."}]}
    msg = prepare("user", [found, {"type": "text", "text": "When does it run?"}])
    assert msg.blocks == [found, {"type": "text", "text": "When does it run?"}]
    assert '[search result "Trams" (https://kb.example/1): Tram 28' in msg.content
    nested = prepare("tool", [{"type": "tool_result", "tool_use_id": "toolu_1",
                               "content": [found]}])
    assert nested.blocks is not None and nested.blocks[0]["content"] == [found]
    assert sdk_problem({"messages": [{"role": "user", "content": msg.blocks}]}) is None


def _use(**fields: Any) -> dict[str, Any]:
    return {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
            "input": {"query": "q"}, **fields}


@pytest.mark.parametrize(("role", "content", "says"), [
    ("assistant", [{"type": "server_tool_use", "name": "web_search", "input": {}}],
     "content[0] (server_tool_use): id: Field required"),
    ("assistant", [_use(id="bad id!")], "content[0] (server_tool_use): id: String should"),
    ("assistant", [_use(input="q")], "content[0] (server_tool_use): input: Input should be"),
    ("assistant", [_use(), _use()], "content[1] (server_tool_use): id 'srvtoolu_1' is used"),
    ("assistant", [{"type": "web_search_tool_result", "content": []}],
     "content[0] (web_search_tool_result): tool_use_id: Field required"),
    ("assistant", [{"type": "web_search_tool_result", "tool_use_id": "s", "content": "x"}],
     "content[0] (web_search_tool_result): content: Input should be"),
    ("assistant", [{"type": "code_execution_tool_result", "tool_use_id": "s",
                    "content": {}, "caller": {}}],
     "content[0] (code_execution_tool_result): caller: Extra inputs are not permitted"),
    ("assistant", [{"type": "mcp_tool_use", "id": "m", "name": "f", "input": {}}],
     "content[0] (mcp_tool_use): server_name: Field required"),
    ("assistant", [{"type": "mcp_tool_result", "tool_use_id": "m", "is_error": "no"}],
     "content[0] (mcp_tool_result): is_error: Input should be a valid boolean"),
    ("assistant", [{"type": "compaction", "content": ""}],
     "content[0] (compaction): content is empty"),
    ("assistant", [{"type": "compaction", "content": 3}],
     "content[0] (compaction): content: Input should be a valid string"),
    ("assistant", [{"type": "compaction", "summary": "x"}],
     "content[0] (compaction): summary: Extra inputs are not permitted"),
    ("user", [_use()], "content[0] (server_tool_use): user messages cannot hold"),
    ("tool", [compaction()], "content[0] (compaction): tool messages cannot hold"),
    ("user", [{"type": "container_upload"}],
     "content[0] (container_upload): file_id: Field required"),
    ("user", [{"type": "search_result", "source": "s", "title": "t", "content": "x"}],
     "content[0] (search_result): content: Input should be a valid list"),
    ("assistant", [{"type": "hologram", "data": "a\x00b"}],
     "content[0] (hologram).data contains a NUL"),
])
def test_malformed_blocks_are_refused_naming_the_field(role: str, content: Any,
                                                       says: str) -> None:
    with pytest.raises(InvalidInput) as err:
        prepare(role, content)
    assert says in str(err.value)


def _sdk_keys(module: Any, name: str) -> tuple[set[str], set[str], set[str]]:
    hints = typing_extensions.get_type_hints(getattr(module, name), include_extras=True)
    required = {k for k, v in hints.items()
                if typing_extensions.get_origin(v) in (typing.Required,
                                                       typing_extensions.Required)}
    tags = set(typing.get_args(typing_extensions.get_args(hints["type"])[0]))
    return set(hints), required, tags


@pytest.mark.parametrize(("model", "sdk_name"), [
    (vendored.SearchResultBlock, "SearchResultBlockParam"),
    (vendored.ServerToolUseBlock, "ServerToolUseBlockParam"),
    (vendored.WebSearchToolResultBlock, "WebSearchToolResultBlockParam"),
    (vendored.WebFetchToolResultBlock, "WebFetchToolResultBlockParam"),
    (vendored.CodeExecutionToolResultBlock, "CodeExecutionToolResultBlockParam"),
    (vendored.BashCodeExecutionToolResultBlock, "BashCodeExecutionToolResultBlockParam"),
    (vendored.TextEditorCodeExecutionToolResultBlock,
     "TextEditorCodeExecutionToolResultBlockParam"),
    (vendored.ToolSearchToolResultBlock, "ToolSearchToolResultBlockParam"),
    (vendored.ContainerUploadBlock, "ContainerUploadBlockParam"),
    (vendored.MCPToolUseBlock, "beta.BetaMCPToolUseBlockParam"),
    (vendored.MCPToolResultBlock, "beta.BetaRequestMCPToolResultBlockParam"),
    (vendored.CompactionBlock, "beta.BetaCompactionBlockParam"),
])
def test_each_server_block_model_mirrors_its_sdk_type(model: Any, sdk_name: str) -> None:
    import anthropic.types as sdk
    import anthropic.types.beta as beta

    module, _, name = sdk_name.rpartition(".")
    keys, required, tags = _sdk_keys(beta if module else sdk, name)
    fields = model.model_fields
    assert set(fields) <= keys, f"{model.__name__} has fields the SDK's {sdk_name} lacks"
    assert {k for k, f in fields.items() if f.is_required()} == required
    assert set(typing.get_args(fields["type"].annotation)) == tags


def test_every_reply_block_type_of_the_sdk_is_known() -> None:
    """A block type the installed SDK's replies can hold is validated, not passed
    through as unknown (the beta's experimental ones excepted)."""
    from anthropic.types import ContentBlock

    union = typing.get_args(typing_extensions.get_args(ContentBlock)[0])
    sdk_types = {typing.get_args(m.model_fields["type"].annotation)[0] for m in union}
    assert sdk_types <= vendored.KNOWN_TYPES
