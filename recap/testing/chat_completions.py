"""The OpenAI-compatible route (``POST /v1/chat/completions``), as Anthropic's OpenAI
SDK compatibility layer serves it: a client built on the OpenAI SDK (the OpenAI
Agents SDK's ``OpenAIChatCompletionsModel``) talks to the stand-in with
``base_url=<url>/v1/``. A request is translated to a Messages API request, answered
like any other (routes, assistant queue, script, default) and translated back."""

from __future__ import annotations

import json
import time
from typing import Any

DEFAULT_MAX_TOKENS = 4096
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls",
          "max_tokens": "length"}


class BadRequest(ValueError):
    """A chat completions request the route cannot translate (the 400 it answers)."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content
                       if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _append(messages: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    # The Messages API alternates roles: consecutive turns of one role are one message.
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"].extend(blocks)
    else:
        messages.append({"role": role, "content": blocks})


def _arguments(raw: Any, where: str) -> dict[str, Any]:
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        raise BadRequest(f"{where}.function.arguments: not JSON") from None
    if not isinstance(data, dict):
        raise BadRequest(f"{where}.function.arguments: expected a JSON object")
    return data


def to_messages_request(body: Any) -> dict[str, Any]:
    """The Messages API request for a chat completions ``body``; BadRequest names the
    field it cannot translate."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise BadRequest("messages: Field required")
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for i, m in enumerate(body["messages"]):
        role = m.get("role") if isinstance(m, dict) else None
        if role in ("system", "developer"):
            system.append(_text(m.get("content")))
        elif role == "user":
            _append(messages, "user", [{"type": "text", "text": _text(m.get("content"))}])
        elif role == "assistant":
            text = _text(m.get("content"))
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            for j, call in enumerate(m.get("tool_calls") or []):
                fn = call.get("function") or {}
                blocks.append({"type": "tool_use", "id": call.get("id"), "name": fn.get("name"),
                               "input": _arguments(fn.get("arguments"),
                                                   f"messages.{i}.tool_calls.{j}")})
            _append(messages, "assistant", blocks)
        elif role == "tool":
            _append(messages, "user", [{"type": "tool_result", "tool_use_id": m.get("tool_call_id"),
                                        "content": _text(m.get("content")) or "(empty)"}])
        else:
            raise BadRequest(f"messages.{i}.role: unknown role {role!r}")
    out: dict[str, Any] = {
        "model": body.get("model"), "messages": messages,
        "max_tokens": body.get("max_completion_tokens") or body.get("max_tokens")
        or DEFAULT_MAX_TOKENS}
    if any(system):
        out["system"] = "\n\n".join(s for s in system if s)
    tools = [t.get("function") or {} for t in body.get("tools") or []]
    if tools:
        out["tools"] = [{"name": t.get("name"), "description": t.get("description", ""),
                         "input_schema": t.get("parameters") or {"type": "object"}}
                        for t in tools]
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        out["tool_choice"] = {"type": "tool", "name": (choice.get("function") or {}).get("name")}
    elif choice == "required":
        out["tool_choice"] = {"type": "any"}
    return out


def to_chat_completion(message: dict[str, Any]) -> dict[str, Any]:
    """A Messages API answer as the chat completion Anthropic's compatibility layer sends."""
    text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
    calls = [{"id": b["id"], "type": "function",
              "function": {"name": b["name"], "arguments": json.dumps(b["input"])}}
             for b in message["content"] if b["type"] == "tool_use"]
    reply: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        reply["tool_calls"] = calls
    usage = message["usage"]
    prompt = (usage["input_tokens"] + usage.get("cache_read_input_tokens", 0)
              + usage.get("cache_creation_input_tokens", 0))
    return {"id": f"chatcmpl-{message['id']}", "object": "chat.completion",
            "created": int(time.time()), "model": message["model"],
            "choices": [{"index": 0, "message": reply,
                         "finish_reason": FINISH.get(message["stop_reason"], "stop")}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": usage["output_tokens"],
                      "total_tokens": prompt + usage["output_tokens"]}}


def chunks_body(completion: dict[str, Any]) -> bytes:
    """``completion`` streamed (``"stream": true``): one chunk with the message, one
    with the finish reason, then ``data: [DONE]``."""
    choice = completion["choices"][0]
    delta = dict(choice["message"])
    for i, call in enumerate(delta.get("tool_calls") or []):
        call["index"] = i
    head = {k: completion[k] for k in ("id", "created", "model")}
    first = {**head, "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    last = {**head, "object": "chat.completion.chunk", "usage": completion["usage"],
            "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in (first, last)) + \
        b"data: [DONE]\n\n"
