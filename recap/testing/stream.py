"""A message as the Messages API streams it (``"stream": true``): server-sent events
message_start, ping, then per content block content_block_start, its deltas
(``text_delta`` for text, ``input_json_delta`` for a tool call's input) and
content_block_stop, then message_delta (stop reason, output tokens) and
message_stop."""

from __future__ import annotations

import json
from typing import Any

PIECE = 24  # characters per delta: a client must join several


def _pieces(text: str) -> list[str]:
    return [text[i:i + PIECE] for i in range(0, len(text), PIECE)] or [""]


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def sse_body(message: dict[str, Any]) -> bytes:
    """``message`` (a Messages API answer) as the event stream the API sends for it."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": 1}}
    out = [_event("message_start", {"type": "message_start", "message": start}),
           _event("ping", {"type": "ping"})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            opened = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p}
                      for p in _pieces(json.dumps(block["input"]))]
        else:
            opened = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
        out.append(_event("content_block_start", {"type": "content_block_start", "index": i,
                                                  "content_block": opened}))
        out += [_event("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": d}) for d in deltas]
        out.append(_event("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(_event("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": usage["output_tokens"]}}))
    out.append(_event("message_stop", {"type": "message_stop"}))
    return b"".join(out)
