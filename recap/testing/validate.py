"""The Messages API's request checks that matter to Recap, as the fake applies them:
shape, roles, empty content, sampling parameters, content blocks (recap.testing.blocks)
and prompt-caching breakpoints. Each check returns the API's complaint, or None."""

from __future__ import annotations

from typing import Any

from recap.testing.blocks import opens_with_compaction, validate_content_blocks


def validate_messages_request(body: Any) -> str | None:
    """The Messages API's own checks that matter to Recap; None when valid."""
    if not isinstance(body, dict):
        return "body: expected an object"
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return f"{key}: Field required"
    for key in ("temperature", "top_p", "top_k"):
        if key in body:  # API version 2026-10-21 removed sampling parameters
            return f"{key}: Extra inputs are not permitted"
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    # A compaction block opens the conversation it summarizes, in the assistant's turn.
    if messages[0].get("role") != "user" and not opens_with_compaction(messages[0]):
        return "messages: first message must use the \"user\" role"
    for i, m in enumerate(messages):
        problem = _message_problem(i, m)
        if problem:
            return problem
    last = messages[-1]
    if (last.get("role") == "assistant" and isinstance(last.get("content"), str)
            and last["content"] != last["content"].rstrip()):
        return "messages: final assistant content cannot end with trailing whitespace"
    problem = validate_content_blocks(messages)
    if problem:
        return problem
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        return "system: Input should be a string or a list"
    return validate_cache_control(body)


def _message_problem(i: int, m: Any) -> str | None:
    """One message's role and content shape."""
    if m.get("role") not in ("user", "assistant"):
        return f"messages.{i}.role: Input should be 'user' or 'assistant'"
    content = m.get("content")
    if isinstance(content, str):
        if not content.strip():
            return f"messages.{i}: text content blocks must be non-empty"
    elif isinstance(content, list):
        if not content:
            return f"messages.{i}: content must be non-empty"
        for b in content:
            if b.get("type") == "text" and not str(b.get("text", "")).strip():
                return f"messages.{i}: text content blocks must be non-empty"
    else:
        return f"messages.{i}.content: Input should be a string or a list"
    return None


# -- prompt caching -------------------------------------------------------------------

MAX_CACHE_BREAKPOINTS = 4


def _cacheable(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(location, block) for every block that may carry ``cache_control``, in the
    API's prefix order: tools, system, messages."""
    out = [(f"tools.{i}", t) for i, t in enumerate(body.get("tools") or [])
           if isinstance(t, dict)]
    if isinstance(body.get("system"), list):
        out += [(f"system.{i}", b) for i, b in enumerate(body["system"]) if isinstance(b, dict)]
    for i, m in enumerate(body.get("messages") or []):
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            out += [(f"messages.{i}.content.{j}", b) for j, b in enumerate(m["content"])
                    if isinstance(b, dict)]
    return out


def validate_cache_control(body: dict[str, Any]) -> str | None:
    """The API's checks of ``cache_control``: at most 4 breakpoints across tools,
    system and messages; ``{"type": "ephemeral"}`` with an optional ``ttl`` of
    "5m" or "1h", no 1h breakpoint after a 5m one; never on an empty text block
    or a thinking block. None when valid."""
    marked = [(where, b) for where, b in _cacheable(body) if "cache_control" in b]
    if len(marked) > MAX_CACHE_BREAKPOINTS:
        return (f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be "
                f"provided. Found {len(marked)}.")
    seen_5m = False
    for where, block in marked:
        cc = block["cache_control"]
        if not isinstance(cc, dict) or cc.get("type") != "ephemeral":
            return f"{where}.cache_control.type: Input should be 'ephemeral'"
        extra = set(cc) - {"type", "ttl"}
        if extra:
            return f"{where}.cache_control.{sorted(extra)[0]}: Extra inputs are not permitted"
        ttl = cc.get("ttl", "5m")
        if ttl not in ("5m", "1h"):
            return f"{where}.cache_control.ttl: Input should be '5m' or '1h'"
        if ttl == "1h" and seen_5m:
            return ("a ttl='1h' cache_control block must not come after a ttl='5m' "
                    f"cache_control block ({where})")
        seen_5m = seen_5m or ttl == "5m"
        if block.get("type") in ("thinking", "redacted_thinking"):
            return f"{where}.{block['type']}.cache_control: Extra inputs are not permitted"
        if block.get("type") == "text" and not str(block.get("text", "")).strip():
            return f"{where}: cache_control cannot be set for empty text blocks"
    return None
