"""The fake Messages API's checks of content blocks (recap/testing/server.py calls
:func:`validate_content_blocks`): block shapes, where each block may appear,
tool_use/tool_result pairing, server tool and MCP calls answered in their own
turn, and where a compaction block may go, as the real API checks them."""

from __future__ import annotations

import re
from typing import Any

# The block shapes the API takes (what Recap replays), key -> required?
_BLOCK_KEYS: dict[str, dict[str, bool]] = {
    "text": {"text": True, "citations": False, "cache_control": False},
    "image": {"source": True, "cache_control": False},
    "document": {"source": True, "title": False, "context": False, "citations": False,
                 "cache_control": False},
    "tool_use": {"id": True, "name": True, "input": True, "cache_control": False,
                 "caller": False, "toolset_name": False},
    "tool_result": {"tool_use_id": True, "content": False, "is_error": False,
                    "cache_control": False, "toolset_name": False},
    "thinking": {"thinking": True, "signature": True},
    "redacted_thinking": {"data": True},
    "search_result": {"source": True, "title": True, "content": True, "citations": False,
                      "cache_control": False},
    "container_upload": {"file_id": True, "cache_control": False},
    "server_tool_use": {"id": True, "name": True, "input": True, "cache_control": False,
                        "caller": False},
    "mcp_tool_use": {"id": True, "name": True, "server_name": True, "input": True,
                     "cache_control": False},
    "mcp_tool_result": {"tool_use_id": True, "content": False, "is_error": False,
                        "cache_control": False},
    "compaction": {"content": False, "encrypted_content": False, "signature": False,
                   "tool_changes": False, "cache_control": False},
}
# A server tool's result answers a server_tool_use of the same turn.
SERVER_RESULTS = ("web_search_tool_result", "web_fetch_tool_result",
                  "code_execution_tool_result", "bash_code_execution_tool_result",
                  "text_editor_code_execution_tool_result", "tool_search_tool_result")
_BLOCK_KEYS.update({kind: {"tool_use_id": True, "content": True, "cache_control": False,
                           **({"caller": False} if kind.startswith("web_") else {})}
                    for kind in SERVER_RESULTS})
_SERVER_CALLS = ("server_tool_use", "mcp_tool_use")
_SERVER_ANSWERS = (*SERVER_RESULTS, "mcp_tool_result")
_SOURCE_KEYS = {"base64": {"media_type", "data"}, "url": {"url"}, "file": {"file_id"},
                "text": {"media_type", "data"}, "content": {"content"}}
_IMAGE_MEDIA = ("image/jpeg", "image/png", "image/gif", "image/webp")
_ROLE_BLOCKS = {"user": ("text", "image", "document", "tool_result", "search_result",
                         "container_upload"),
                "assistant": ("text", "tool_use", "thinking", "redacted_thinking",
                              "container_upload", *_SERVER_CALLS, *_SERVER_ANSWERS,
                              "compaction")}
_IN_RESULT = ("text", "image", "document", "search_result")
_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def _block_problem(b: Any, where: str, allowed: tuple[str, ...]) -> str | None:
    """The API's complaint about one content block, or None."""
    if not isinstance(b, dict) or b.get("type") not in _BLOCK_KEYS:
        return f"{where}.type: Input tag {b.get('type') if isinstance(b, dict) else b!r} " \
               "does not match any of the expected tags"
    kind = b["type"]
    if kind not in allowed:
        return f"{where}: {kind} blocks are not allowed here"
    keys = _BLOCK_KEYS[kind]
    for key in set(b) - set(keys) - {"type"}:
        return f"{where}.{kind}.{key}: Extra inputs are not permitted"
    for key, required in keys.items():
        if required and key not in b:
            return f"{where}.{kind}.{key}: Field required"
    if kind == "text" and (not isinstance(b["text"], str) or not b["text"].strip()):
        return f"{where}: text content blocks must be non-empty"
    if kind in ("tool_use", "tool_result", *_SERVER_CALLS, *_SERVER_ANSWERS):
        ident = b["id"] if "id" in keys else b["tool_use_id"]
        if not isinstance(ident, str) or not _TOOL_ID.match(ident):
            return f"{where}.{kind}: String should match pattern '^[a-zA-Z0-9_-]+$'"
    if kind == "tool_use" and not isinstance(b["input"], dict):
        return f"{where}.tool_use.input: Input should be a valid dictionary"
    if kind == "thinking" and not (isinstance(b["thinking"], str)
                                   and isinstance(b["signature"], str)):
        return f"{where}.thinking: thinking and signature must be strings"
    if kind == "tool_result" and isinstance(b.get("content"), list):
        for j, inner in enumerate(b["content"]):
            problem = _block_problem(inner, f"{where}.content.{j}", _IN_RESULT)
            if problem:
                return problem
    if kind == "tool_result" and "is_error" in b and not isinstance(b["is_error"], bool):
        return f"{where}.tool_result.is_error: Input should be a valid boolean"
    if kind in ("image", "document"):
        return _source_problem(b["source"], f"{where}.{kind}.source", image=kind == "image")
    return None


def _source_problem(src: Any, where: str, *, image: bool) -> str | None:
    kinds = ("base64", "url", "file") if image else ("base64", "url", "file", "text", "content")
    if not isinstance(src, dict) or src.get("type") not in kinds:
        return f"{where}: Input tag does not match any of the expected tags"
    if set(src) != _SOURCE_KEYS[src["type"]] | {"type"}:
        return f"{where}: expected exactly the keys {sorted(_SOURCE_KEYS[src['type']])}"
    media = src.get("media_type")
    if src["type"] == "base64" and media not in (_IMAGE_MEDIA if image else ("application/pdf",)):
        return f"{where}.media_type: Input should be one of the supported media types"
    if src["type"] == "text" and media != "text/plain":
        return f"{where}.media_type: Input should be 'text/plain'"
    return None


def validate_content_blocks(messages: list[Any]) -> str | None:
    """The API's checks of content blocks and of tool_use/tool_result pairing:
    each tool_result answers a tool_use of the immediately previous assistant turn
    and comes before any other block of its user turn; every tool_use is answered
    in the next user turn; a server tool or MCP call is answered in its own turn
    (the last turn may still wait); a compaction block only opens the
    conversation; a final assistant turn ends without trailing whitespace."""
    for i, m in enumerate(messages):
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for j, b in enumerate(content):
            problem = _block_problem(b, f"messages.{i}.content.{j}", _ROLE_BLOCKS[m["role"]])
            if problem:
                return problem
        problem = (_user_problem(messages, i) if m["role"] == "user"
                   else _assistant_problem(messages, i))
        if problem:
            return problem
    return _compaction_problem(messages)


def _user_problem(messages: list[Any], i: int) -> str | None:
    """Where a user turn's tool_result blocks sit and what they answer."""
    content = messages[i]["content"]
    results = [b["tool_use_id"] for b in content if b["type"] == "tool_result"]
    first_other = next((k for k, b in enumerate(content) if b["type"] != "tool_result"),
                       len(content))
    if any(b["type"] == "tool_result" for b in content[first_other:]):
        return (f"messages.{i}: tool_result blocks must come before any other content "
                "in the user message")
    prev = messages[i - 1] if i else None
    calls = ([b["id"] for b in prev["content"] if b.get("type") == "tool_use"]
             if prev and isinstance(prev.get("content"), list) else [])
    for ident in results:
        if ident not in calls:
            return (f"messages.{i}.content: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {ident}. Each `tool_result` block must "
                    "have a corresponding `tool_use` block in the previous message.")
    if len(set(results)) != len(results):
        return f"messages.{i}.content: duplicate tool_result for one tool_use id"
    return None


def _assistant_problem(messages: list[Any], i: int) -> str | None:
    """An assistant turn's calls: unique, answered in the next user turn (tools) or
    in this one (server tools and MCP); no trailing whitespace when it is last."""
    content = messages[i]["content"]
    calls = [b["id"] for b in content if b["type"] == "tool_use"]
    if len(set(calls)) != len(calls):
        return f"messages.{i}.content: tool_use ids must be unique"
    nxt = messages[i + 1] if i + 1 < len(messages) else None
    if nxt is not None and calls:
        answered = ({b.get("tool_use_id") for b in nxt["content"]
                     if isinstance(b, dict) and b.get("type") == "tool_result"}
                    if isinstance(nxt.get("content"), list) else set())
        missing = [c for c in calls if c not in answered]
        if missing:
            return (f"messages.{i}: `tool_use` ids were found without `tool_result` "
                    f"blocks immediately after: {', '.join(missing)}. Each `tool_use` "
                    "block must have a corresponding `tool_result` block in the next "
                    "message.")
    if nxt is None and content and content[-1].get("type") == "text" and \
            content[-1]["text"] != content[-1]["text"].rstrip():
        return "messages: final assistant content cannot end with trailing whitespace"
    return _server_problem(content, f"messages.{i}", last=nxt is None)


def _server_problem(content: list[dict[str, Any]], where: str, *, last: bool) -> str | None:
    """Each server tool or MCP result answers a call made before it in this turn,
    once; each call is answered in this turn, unless the turn is the last."""
    calls: set[str] = set()
    answered: set[str] = set()
    for b in content:
        if b["type"] in _SERVER_CALLS:
            if b["id"] in calls:
                return f"{where}.content: server tool use ids must be unique: {b['id']}"
            calls.add(b["id"])
        elif b["type"] in _SERVER_ANSWERS:
            ident = b["tool_use_id"]
            if ident not in calls or ident in answered:
                return (f"{where}.content: `{b['type']}` block with tool_use_id {ident} has "
                        "no corresponding server tool use block before it in this message")
            answered.add(ident)
    missing = sorted(calls - answered)
    if missing and not last:
        return (f"{where}: server tool use ids were found without result blocks in the "
                f"same message: {', '.join(missing)}")
    return None


def _compaction_problem(messages: list[Any]) -> str | None:
    """A compaction block only as the first block of the conversation, so at most
    one (the API's compaction_block_misplaced), with a summary or content null."""
    blocks = [(i, j, b) for i, m in enumerate(messages) if isinstance(m.get("content"), list)
              for j, b in enumerate(m["content"]) if b.get("type") == "compaction"]
    for i, j, _ in blocks:
        if (i, j) != (0, 0):
            return (f"messages.{i}.content.{j}: the compaction block must be the first block "
                    "of the conversation (compaction_block_misplaced)")
    for _, _, b in blocks:
        if b.get("content") is not None and (not isinstance(b["content"], str)
                                             or not b["content"].strip()):
            return "messages.0.content.0.compaction.content: empty string content is not allowed"
    return None


def opens_with_compaction(message: Any) -> bool:
    """Whether ``message`` opens with a compaction block: the one turn the API takes
    as the first even when it is the assistant's."""
    content = message.get("content") if isinstance(message, dict) else None
    return (isinstance(content, list) and bool(content) and isinstance(content[0], dict)
            and content[0].get("type") == "compaction")
