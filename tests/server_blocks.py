"""Replies that use Claude's server tools, built from the installed SDK's own
response types (``model_dump``, as an app stores ``reply.content``): web search,
web fetch, code execution (Python, bash, text editor), tool search, MCP, a
container upload, a compaction, citations, and a block of a type the SDK does
not know yet. For the block tests of every layer (core, API, HTTP, jobs)."""

from __future__ import annotations

from typing import Any

from anthropic.types import (
    BashCodeExecutionResultBlock,
    BashCodeExecutionToolResultBlock,
    CitationsWebSearchResultLocation,
    CodeExecutionOutputBlock,
    CodeExecutionResultBlock,
    CodeExecutionToolResultBlock,
    ContainerUploadBlock,
    DocumentBlock,
    PlainTextSource,
    ServerToolUseBlock,
    TextBlock,
    TextEditorCodeExecutionToolResultBlock,
    TextEditorCodeExecutionViewResultBlock,
    ToolReferenceBlock,
    ToolSearchToolResultBlock,
    ToolSearchToolSearchResultBlock,
    WebFetchBlock,
    WebFetchToolResultBlock,
    WebSearchResultBlock,
    WebSearchToolResultBlock,
)
from anthropic.types.beta import (
    BetaCompactionBlock,
    BetaMCPToolResultBlock,
    BetaMCPToolUseBlock,
    BetaTextBlock,
)

# What only the API can read: never shown to the summarizer.
ENCRYPTED = "EqgfCkYIBxgCKkBbase64opaque+/=="
SIGNATURE = "sig-EuYBCkQYAiJAsignedsummary=="
SUMMARY = "The user is planning a trip to Lisbon in May and asked about the weather."
# A block type the installed SDK does not know (the API may add one any day).
FUTURE = {"type": "hologram", "frames": [{"at": 0, "data": "AAEC"}], "note": None}


def dumped(*blocks: Any) -> list[dict[str, Any]]:
    """``[b.model_dump() for b in reply.content]``: what an app stores."""
    return [b.model_dump() for b in blocks]


def web_search_reply(n: int = 1) -> list[dict[str, Any]]:
    """A reply that searched the web and answered with a citation."""
    use = f"srvtoolu_ws{n}"
    return dumped(
        TextBlock(type="text", text="Let me look that up."),
        ServerToolUseBlock(type="server_tool_use", id=use, name="web_search",
                           input={"query": "Lisbon weather in May"}),
        WebSearchToolResultBlock(type="web_search_tool_result", tool_use_id=use, content=[
            WebSearchResultBlock(type="web_search_result", title="Lisbon climate",
                                 url="https://weather.example/lisbon", page_age="2 days",
                                 encrypted_content=ENCRYPTED),
            WebSearchResultBlock(type="web_search_result", title="May in Portugal",
                                 url="https://travel.example/may", page_age=None,
                                 encrypted_content=ENCRYPTED)]),
        TextBlock(type="text", text="May in Lisbon is mild, around 22C.", citations=[
            CitationsWebSearchResultLocation(
                type="web_search_result_location", cited_text="around 22C",
                url="https://weather.example/lisbon", title="Lisbon climate",
                encrypted_index=ENCRYPTED)]))


def tools_reply() -> list[dict[str, Any]]:
    """A reply that fetched a page, ran code three ways and searched its tools."""
    page = DocumentBlock(type="document", title="Lisbon guide", citations=None,
                         source=PlainTextSource(type="text", media_type="text/plain",
                                                data="Trams run until midnight."))
    return dumped(
        ServerToolUseBlock(type="server_tool_use", id="srvtoolu_wf", name="web_fetch",
                           input={"url": "https://guide.example/lisbon"}),
        WebFetchToolResultBlock(type="web_fetch_tool_result", tool_use_id="srvtoolu_wf",
                                content=WebFetchBlock(type="web_fetch_result",
                                                      url="https://guide.example/lisbon",
                                                      content=page, retrieved_at=None)),
        ServerToolUseBlock(type="server_tool_use", id="srvtoolu_py", name="code_execution",
                           input={"code": "print(22 * 9 / 5 + 32)"}),
        CodeExecutionToolResultBlock(
            type="code_execution_tool_result", tool_use_id="srvtoolu_py",
            content=CodeExecutionResultBlock(type="code_execution_result", return_code=0,
                                             stdout="71.6\n", stderr="",
                                             content=[CodeExecutionOutputBlock(
                                                 type="code_execution_output",
                                                 file_id="file_out1")])),
        ServerToolUseBlock(type="server_tool_use", id="srvtoolu_sh",
                           name="bash_code_execution", input={"command": "ls /data"}),
        BashCodeExecutionToolResultBlock(
            type="bash_code_execution_tool_result", tool_use_id="srvtoolu_sh",
            content=BashCodeExecutionResultBlock(type="bash_code_execution_result",
                                                 return_code=2, stdout="",
                                                 stderr="ls: cannot access '/data'",
                                                 content=[])),
        ServerToolUseBlock(type="server_tool_use", id="srvtoolu_ed",
                           name="text_editor_code_execution",
                           input={"command": "view", "path": "/tmp/notes.txt"}),
        TextEditorCodeExecutionToolResultBlock(
            type="text_editor_code_execution_tool_result", tool_use_id="srvtoolu_ed",
            content=TextEditorCodeExecutionViewResultBlock(
                type="text_editor_code_execution_view_result", file_type="text",
                content="pack sunscreen", num_lines=1, start_line=1, total_lines=1)),
        ServerToolUseBlock(type="server_tool_use", id="srvtoolu_ts",
                           name="tool_search_tool_regex", input={"pattern": "weather"}),
        ToolSearchToolResultBlock(
            type="tool_search_tool_result", tool_use_id="srvtoolu_ts",
            content=ToolSearchToolSearchResultBlock(
                type="tool_search_tool_search_result",
                tool_references=[ToolReferenceBlock(type="tool_reference",
                                                    tool_name="get_forecast")])),
        ContainerUploadBlock(type="container_upload", file_id="file_up1"),
        TextBlock(type="text", text="It is 71.6F; trams run until midnight."))


def mcp_reply() -> list[dict[str, Any]]:
    """A reply that called a tool of an MCP server."""
    return dumped(
        BetaMCPToolUseBlock(type="mcp_tool_use", id="mcptoolu_1", name="list_events",
                            server_name="calendar", input={"day": "2026-05-04"}),
        BetaMCPToolResultBlock(type="mcp_tool_result", tool_use_id="mcptoolu_1",
                               is_error=False, content=[BetaTextBlock(
                                   type="text", text="Dinner at 8pm with Ana")]),
        BetaTextBlock(type="text", text="You have dinner with Ana at 8pm."))


def compaction(content: str | None = SUMMARY) -> dict[str, Any]:
    """A server-side compaction block, as the API returned it."""
    return BetaCompactionBlock(type="compaction", content=content,
                               encrypted_content=ENCRYPTED, signature=SIGNATURE,
                               tool_changes=[]).model_dump()


def every_block() -> list[dict[str, Any]]:
    """One assistant reply holding every kind of block above, and a future one."""
    return [compaction(), *web_search_reply(), *tools_reply(), *mcp_reply(), dict(FUTURE)]


def as_stored(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``blocks`` as Recap keeps them: a known block's top-level None fields are
    absent (as they are to the API), and those of the blocks an MCP result holds;
    a compaction and an unknown block keep them."""
    def known(b: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in b.items() if v is not None}
        if b["type"] == "mcp_tool_result" and isinstance(b["content"], list):
            out["content"] = [known(x) for x in b["content"]]
        return out
    return [b if b["type"] in ("compaction", FUTURE["type"]) else known(b) for b in blocks]


def search_results(tag: str) -> list[dict[str, Any]]:
    """A user turn citing a knowledge base (``search_result`` blocks, alone and in a
    tool's result) whose titles and text carry ``tag``."""
    def result(n: int) -> dict[str, Any]:
        return {"type": "search_result", "source": f"https://kb.example/{n}",
                "title": f"Refund policy {n} {tag}",
                "content": [{"type": "text", "text": f"Refunds take {n} days. {tag}"}],
                "citations": {"enabled": True}}
    return [{"type": "text", "text": "Here is what our knowledge base says."}, result(1)]


def tagged_reply(tag: str) -> list[dict[str, Any]]:
    """A reply whose every server tool result carries ``tag`` in its plain text
    (search titles, a fetched page's title and text, code output, an MCP result,
    a citation) beside the fields only the API reads (encrypted, signed)."""
    page = DocumentBlock(type="document", title=f"Lisbon guide {tag}", citations=None,
                         source=PlainTextSource(type="text", media_type="text/plain",
                                                data=f"Trams run until midnight. {tag}"))
    return dumped(
        ServerToolUseBlock(type="server_tool_use", id="srvtoolu_ws", name="web_search",
                           input={"query": "Lisbon weather in May"}),
        WebSearchToolResultBlock(type="web_search_tool_result", tool_use_id="srvtoolu_ws",
                                 content=[WebSearchResultBlock(
                                     type="web_search_result", title=f"Lisbon climate {tag}",
                                     url="https://weather.example/lisbon", page_age=None,
                                     encrypted_content=ENCRYPTED)]),
        ServerToolUseBlock(type="server_tool_use", id="srvtoolu_wf", name="web_fetch",
                           input={"url": "https://guide.example/lisbon"}),
        WebFetchToolResultBlock(type="web_fetch_tool_result", tool_use_id="srvtoolu_wf",
                                content=WebFetchBlock(type="web_fetch_result",
                                                      url="https://guide.example/lisbon",
                                                      content=page, retrieved_at=None)),
        ServerToolUseBlock(type="server_tool_use", id="srvtoolu_py", name="code_execution",
                           input={"code": "print(open('notes').read())"}),
        CodeExecutionToolResultBlock(
            type="code_execution_tool_result", tool_use_id="srvtoolu_py",
            content=CodeExecutionResultBlock(type="code_execution_result", return_code=0,
                                             stdout=f"notes {tag}\n", stderr=f"warn {tag}",
                                             content=[])),
        ServerToolUseBlock(type="server_tool_use", id="srvtoolu_sh",
                           name="bash_code_execution", input={"command": "cat notes"}),
        BashCodeExecutionToolResultBlock(
            type="bash_code_execution_tool_result", tool_use_id="srvtoolu_sh",
            content=BashCodeExecutionResultBlock(type="bash_code_execution_result",
                                                 return_code=0, stdout=f"notes {tag}",
                                                 stderr=f"warn {tag}", content=[])),
        ServerToolUseBlock(type="server_tool_use", id="srvtoolu_ed",
                           name="text_editor_code_execution",
                           input={"command": "view", "path": "/tmp/notes.txt"}),
        TextEditorCodeExecutionToolResultBlock(
            type="text_editor_code_execution_tool_result", tool_use_id="srvtoolu_ed",
            content=TextEditorCodeExecutionViewResultBlock(
                type="text_editor_code_execution_view_result", file_type="text",
                content=f"pack sunscreen {tag}", num_lines=1, start_line=1, total_lines=1)),
        BetaMCPToolUseBlock(type="mcp_tool_use", id="mcptoolu_1", name="list_events",
                            server_name="calendar", input={"day": "2026-05-04"}),
        BetaMCPToolResultBlock(type="mcp_tool_result", tool_use_id="mcptoolu_1",
                               is_error=False, content=[BetaTextBlock(
                                   type="text", text=f"Dinner at 8pm with Ana {tag}")]),
        TextBlock(type="text", text="May in Lisbon is mild, around 22C.", citations=[
            CitationsWebSearchResultLocation(
                type="web_search_result_location", cited_text=f"around 22C {tag}",
                url="https://weather.example/lisbon", title=f"Lisbon climate {tag}",
                encrypted_index=ENCRYPTED)]))
