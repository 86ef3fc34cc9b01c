"""LangChain messages to Recap's stored rows and back: shared by
``RecapMiddleware`` (recap.integrations.langchain_middleware) and the older
``RecapChatMessageHistory`` (recap.integrations.langchain).

- ``to_row``: a message as ``(role, content)``: text-only content as text,
  anything else as Messages API blocks; an ``AIMessage``'s ``tool_calls`` as
  ``tool_use`` blocks, a ``ToolMessage`` as a ``tool_result`` block.
- ``from_context``: ``build_context``'s output as messages (system first),
  ``tool_use`` blocks as ``AIMessage.tool_calls`` and each ``tool_result`` as a
  ``ToolMessage`` right after the AI turn that called it.
"""

from __future__ import annotations

from typing import Any

from recap.api.ingest import prepare
from recap.api.turns import Turn
from recap.core.context.assemble import system_text
from recap.errors import InvalidInput

try:
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("recap.integrations needs langchain-core for LangChain: "
                      "pip install 'recap-worker[langchain]'") from exc

__all__ = ["from_context", "to_row", "to_turn"]

# Checked in this order: the *Chunk classes subclass these.
_ROLES: tuple[tuple[type[BaseMessage], str], ...] = (
    (HumanMessage, "user"), (AIMessage, "assistant"), (SystemMessage, "system"),
    (ToolMessage, "tool"))


# Block types of LangChain's own standard content and of OpenAI's format: no Messages
# API block has them, so a reply built from one would be refused at its next request.
# Recap keeps unknown types as they came (a block the Messages API adds later); these
# are known not to be such, so they are refused here with what to do.
_NOT_MESSAGES_API = frozenset({
    "image_url", "input_audio", "audio", "video", "file", "text-plain", "reasoning",
    "non_standard", "tool_call", "tool_call_chunk", "invalid_tool_call",
    "server_tool_call", "server_tool_call_chunk", "server_tool_result"})


def _content(content: object, what: str) -> str | list[Any]:
    """The message's content to store: text-only content joined like LangChain's
    ``message.text``, anything else as a list of blocks (strings as text blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidInput(f"{what}: content must be a str or a list of blocks, "
                           f"got {type(content).__name__}")
    for i, b in enumerate(content):
        kind = b.get("type") if isinstance(b, dict) else None
        if kind in _NOT_MESSAGES_API:
            raise InvalidInput(
                f"{what}: content[{i}] ({kind}): unknown type {kind!r} (a LangChain or "
                "OpenAI block, not a Messages API one: convert it to the Messages API's "
                "blocks, e.g. with langchain-anthropic, before storing it)")
    if all(isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text"
                                  and isinstance(b.get("text"), str)) for b in content):
        return "".join(b if isinstance(b, str) else b["text"] for b in content)
    return [{"type": "text", "text": b} if isinstance(b, str) else b for b in content
            if not (isinstance(b, str) and not b.strip())]


def _tool_blocks(message: BaseMessage, content: str | list[Any], what: str) -> str | list[Any]:
    """``content`` with the message's tool calls or tool result as blocks."""
    if isinstance(message, AIMessage) and message.invalid_tool_calls:
        raise InvalidInput(f"{what}: invalid_tool_calls cannot be stored")
    if isinstance(message, AIMessage) and message.tool_calls:
        blocks = ([{"type": "text", "text": content}] if content.strip() else []) \
            if isinstance(content, str) else list(content)
        present = {b.get("id") for b in blocks if isinstance(b, dict)
                   and b.get("type") == "tool_use"}
        return blocks + [{"type": "tool_use", "id": c["id"], "name": c["name"],
                          "input": c["args"]} for c in message.tool_calls
                         if c["id"] not in present]
    if isinstance(message, ToolMessage):
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id,
                                 "content": content}
        if message.status == "error":
            block["is_error"] = True
        return [block]
    return content


def to_row(message: object, what: str = "message") -> tuple[str, str | list[Any]]:
    """(role, content) to store for one LangChain message; InvalidInput names the
    problem (``what`` says which message)."""
    if not isinstance(message, BaseMessage):
        raise InvalidInput(f"{what} must be a LangChain BaseMessage, "
                           f"got {type(message).__name__}")
    what = f"{what} ({type(message).__name__})"
    role: str | None
    if isinstance(message, ChatMessage):
        role = message.role
    else:
        role = next((r for cls, r in _ROLES if isinstance(message, cls)), None)
    if role is None:
        raise InvalidInput(f"{what}: Recap stores human, ai, system and tool messages, "
                           f"not {message.type!r}")
    content = _tool_blocks(message, _content(message.content, what), what)
    try:
        prepare(role, content, False)
    except InvalidInput as exc:
        raise InvalidInput(f"{what}: {exc}") from None
    return role, content


def from_context(ctx: Any) -> list[BaseMessage]:
    """``build_context``'s output as LangChain messages (system first, if any):
    tool_use blocks as ``AIMessage.tool_calls``, tool_result blocks as
    ``ToolMessage``s."""
    system = system_text(ctx["system"])
    out: list[BaseMessage] = [SystemMessage(content=system)] if system else []
    for m in ctx["messages"]:
        content = m["content"]
        if m["role"] == "assistant":
            calls = [b for b in content if b["type"] == "tool_use"] \
                if isinstance(content, list) else []
            rest = [b for b in content if b["type"] != "tool_use"] if calls else content
            out.append(AIMessage(content=rest, tool_calls=[
                {"name": b["name"], "args": b["input"], "id": b["id"]} for b in calls]))
            continue
        results = [b for b in content if b["type"] == "tool_result"] \
            if isinstance(content, list) else []
        out.extend(ToolMessage(content=b.get("content", ""), tool_call_id=b["tool_use_id"],
                               status="error" if b.get("is_error") else "success")
                   for b in results)
        rest = [b for b in content if b["type"] != "tool_result"] if results else content
        if rest:
            out.append(HumanMessage(content=rest))
    return out




def to_turn(message: object, what: str = "message") -> Turn:
    """:func:`to_row` as a :class:`recap.api.turns.Turn` keyed by the message's id
    (LangGraph gives every message in an agent's state one), so storing the same
    message again is a no-op."""
    role, content = to_row(message, what)
    mid = getattr(message, "id", None)
    return Turn(role, content, (f"lc:{mid}",) if isinstance(mid, str) and mid else ())
