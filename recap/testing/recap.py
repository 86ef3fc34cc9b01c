"""The fake's default answers: what an unscripted request gets.

Recap's own calls are told apart by what Recap sends, never by the conversation's
wording: a forced tool (``record_summary``) is answered with its input (a tool
only offered, as an agent's are, gets text: a scripted assistant's calls come from
:func:`~recap.testing.replies.tool_call`), the
retention guard's repair call (Recap's summary system prompt and repair template)
with the summary plus the listed items, a title call and any other request with a
digest of its messages. :func:`recap_kind` names the call for routes and
benchmarks that count by kind.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from recap.core.prompts.summarize import SYSTEM_PROMPT
from recap.core.prompts.titles import TITLE_SYSTEM
from recap.core.retention.repairs import REPAIR_PROMPT
from recap.testing.answers import (
    default_repair,
    default_summary,
    digest_messages,
    drop_specifics,
    tool_input,
)
from recap.testing.neutral import Neutral
from recap.testing.replies import Reply, Request, texts

RecapKind = Literal["summary", "repair", "title"]
_REPAIR_HEAD = REPAIR_PROMPT.split("{", 1)[0]
_MESSAGE_MARK = '<message role="'


def recap_kind(body: dict[str, Any]) -> RecapKind | None:
    """"summary" (with memories on, the same call mines them), "repair" or "title"
    for Recap's own requests, by their system prompt and template; None for any
    other request."""
    system = "".join(texts(body.get("system") or ""))
    msgs = body.get("messages") or []
    first = "".join(texts(msgs[0].get("content", ""))) if msgs else ""
    if system == SYSTEM_PROMPT:
        return "repair" if first.startswith(_REPAIR_HEAD) else "summary"
    if system == TITLE_SYSTEM:
        return "title"
    if len(msgs) == 1 and _MESSAGE_MARK in first:
        return "summary"  # Recap's summary template under another system prompt
    return None


def answer(request: Request, reply: Reply, *, number: int = 1, fraction: float = 0.0,
           seed: int = 0, neutral: Neutral | None = None
           ) -> tuple[list[dict[str, Any]], str, str]:
    """(content blocks, their text for the output count, stop_reason) answering
    ``request`` with ``reply`` (an ok reply: its text and tool calls, or the default
    answer when it has neither); ``number`` names the tool calls. Only a forced tool
    (``tool_choice`` of type "tool") gets a tool input made up for it: any other
    request, tools offered or not, gets text unless the reply scripts its calls, so
    an agent's loop always ends. Default answers lose ``fraction`` of their
    specifics (by ``seed``). ``neutral``: default answers follow the neutral rule
    (recap.testing.neutral), the same for every caller."""
    prompt, stop = request.prompt, reply.stop_reason
    if request.tool is not None:
        tools = request.body.get("tools") or []
        schema: dict[str, Any] = next((t for t in tools if t.get("name") == request.tool), {})
        if neutral is not None and reply.text is None:
            data = neutral.tool_input(request.body, schema.get("input_schema") or {})
            if fraction:
                data = _lossy(data, fraction, seed)
        else:
            data = tool_input({**request.body, "tools": [schema]}, prompt, reply.text,
                              fraction=fraction, seed=seed)
        content = [{"type": "tool_use", "id": f"toolu_{number}",
                    "name": request.tool, "input": data}]
        return content, json.dumps(data), "tool_use" if stop == "end_turn" else stop
    if reply.calls:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] \
            if reply.text else []
        blocks += [{"type": "tool_use", "id": f"toolu_{number}_{i}", "name": str(c["name"]),
                    "input": dict(c.get("input") or {})} for i, c in enumerate(reply.calls)]
        counted = (reply.text or "") + json.dumps(reply.calls)
        return blocks, counted, "tool_use" if stop == "end_turn" else stop
    if reply.text is not None:
        text = reply.text
    else:
        kind = None if neutral is not None else recap_kind(request.body)
        cap = 3 * request.max_tokens  # characters, as a model stays under max_tokens
        if neutral is not None:
            text = neutral.summary(request.body)
        elif kind == "repair":
            text = default_repair(prompt, cap)
        elif kind is None:
            text = digest_messages(request.body["messages"], cap)
        else:
            text = default_summary(prompt, cap)
        if fraction:
            text = drop_specifics(text, fraction, seed=seed,
                                  kind="repair" if kind == "repair" else "summary")
    return ([{"type": "text", "text": text}] if text != "" else []), text, stop


def _lossy(data: Any, fraction: float, seed: int) -> Any:
    """``data`` (a tool input) with every string losing ``fraction`` of its specifics."""
    if isinstance(data, str):
        return drop_specifics(data, fraction, seed=seed, kind="summary")
    if isinstance(data, dict):
        return {k: _lossy(v, fraction, seed) for k, v in data.items()}
    if isinstance(data, list):
        return [_lossy(v, fraction, seed) for v in data]
    return data
