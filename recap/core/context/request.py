"""``as_request``: only the Messages API fields of a built context, for
``client.messages.create(**as_request(ctx))``, optionally with the app's new user
turn appended where the cache breakpoints expect it (pure)."""

from __future__ import annotations

from typing import Any

from recap.core.context.assemble import (
    Context,
    as_blocks,
    is_memories_block,
    with_breakpoint_last,
)
from recap.core.context.replay import SEPARATOR
from recap.errors import InvalidInput


def as_request(ctx: Context, *, user_message: str | None = None) -> dict[str, Any]:
    """Only the Messages API fields of ``ctx``, for ``client.messages.create(**...)``.

    With ``user_message``, it is appended as the new user turn (merged into a
    trailing user turn, e.g. a tool result). With caching on, the last turn's
    breakpoint moves to the new message, so the next reply reads all of this
    request from cache. An empty ``system`` is left out. ``ctx`` is not changed.
    Raises InvalidInput if ``user_message`` is blank.
    """
    messages = [dict(m) for m in ctx["messages"]]
    if user_message is not None:
        if not isinstance(user_message, str) or not user_message.strip():
            raise InvalidInput("user_message is empty or not a str")
        cached = isinstance(ctx["system"], list) or any(
            isinstance(m["content"], list) and any("cache_control" in b for b in m["content"])
            for m in messages[-1:])
        if cached:
            last = (messages.pop() if messages and messages[-1]["role"] == "user"
                    else {"role": "user", "content": ""})
            messages = [_without_breakpoint(m) for m in messages]
            earlier = as_blocks(last["content"]) if last["content"] else []
            # The memories block stays last, after the breakpoint (see after_history).
            trailing = [b for b in earlier if is_memories_block(b)]
            last = with_breakpoint_last({**last, "content": [
                *(b for b in earlier if not is_memories_block(b)),
                {"type": "text", "text": user_message}]})
            messages.append({**last, "content": [*last["content"], *trailing]})
        elif messages and messages[-1]["role"] == "user":
            last_content = messages[-1]["content"]
            messages[-1]["content"] = (
                last_content + SEPARATOR + user_message if isinstance(last_content, str)
                else [*last_content, {"type": "text", "text": user_message}])
        else:
            messages.append({"role": "user", "content": user_message})
    request: dict[str, Any] = {"messages": messages}
    if ctx["system"]:
        request["system"] = ([dict(b) for b in ctx["system"]] if isinstance(ctx["system"], list)
                             else ctx["system"])
    return request


def _without_breakpoint(message: dict[str, Any]) -> dict[str, Any]:
    if isinstance(message["content"], str) or not any(
            "cache_control" in b for b in message["content"]):
        return message
    return {**message, "content": [{k: v for k, v in b.items() if k != "cache_control"}
                                   for b in message["content"]]}
