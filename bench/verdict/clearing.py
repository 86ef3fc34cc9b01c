"""Full history with caching plus tool-result clearing: the peer an agent gets from
the Messages API itself, modelled on the ``clear_tool_uses_20250919`` context-
management edit (beta ``context-management-2025-06-27``).

Its documented semantics: the client sends the whole history on every request;
when the request's input tokens exceed ``trigger`` (default 100,000), the API
replaces the content of the oldest tool results with a placeholder, keeping the
newest ``keep`` tool uses (default 3); ``clear_at_least`` (default none) skips the
edit when it would free fewer tokens than that; ``exclude_tools`` names tools whose
results are never cleared; ``clear_tool_inputs`` (default off) also clears the
tool calls' inputs (LangChain's ClearToolUsesEdit reads ``clear_at_least``
otherwise: it stops clearing once that much is freed). The edit is applied to
each request as sent: nothing is remembered between requests, so once the history
is past the trigger, every new tool result moves the cleared boundary and the
cached prefix is invalid from the first block cleared anew. Priced with the same
cache model as every system (recap.testing.request_usage), that rewrite is paid,
not assumed away.

Here the edit runs on the session's whole history (the messages in the Messages
API's block form, as the client sends them), then the oldest messages are dropped
over the peers' budget as full history drops them (recap.bench.harness.pricing.full_history):
clearing first keeps more of the conversation under the budget, the peer's best
case. Pure: messages in, request bodies out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.verdict.shapes import Content, Message
from recap.bench.harness import env as benv
from recap.bench.harness.pricing import flat, shaped

PLACEHOLDER = "[tool result cleared]"


@dataclass(frozen=True)
class ClearToolUses:
    """The edit's parameters, at its documented defaults."""

    trigger: int = 100_000  # input tokens of the request that fire the edit
    keep: int = 3  # the newest tool uses kept whole
    clear_at_least: int = 0  # tokens the edit must free, or it is not applied
    exclude_tools: tuple[str, ...] = ()  # tools whose results are never cleared
    clear_tool_inputs: bool = False  # also clear the cleared tool calls' inputs

    def label(self) -> str:
        return f"trigger {self.trigger // 1000}k, keep {self.keep}"


def _tool_names(messages: Sequence[Message]) -> dict[str, str]:
    """tool_use id -> tool name, over the assistant's tool calls."""
    return {b["id"]: b["name"] for role, c in messages if role == "assistant"
            and isinstance(c, list) for b in c if b.get("type") == "tool_use"}


def clearable(messages: Sequence[Message],
              edit: ClearToolUses) -> list[tuple[int, int, dict[str, Any]]]:
    """(message, block index, block) of each tool result the edit may clear, oldest
    first: all but the newest ``keep`` tool results, save the excluded tools'."""
    names = _tool_names(messages)
    found = [(i, j, b) for i, (role, c) in enumerate(messages) if role == "user"
             and isinstance(c, list) for j, b in enumerate(c) if b.get("type") == "tool_result"]
    return [(i, j, b) for i, j, b in found[:max(0, len(found) - edit.keep)]
            if names.get(b.get("tool_use_id", "")) not in edit.exclude_tools]


def cleared(messages: Sequence[Message], edit: ClearToolUses, *,
            count: Callable[[str], int]) -> list[Message]:
    """``messages`` as the API reads them after the edit: unchanged under the
    trigger, or when it would free fewer than ``clear_at_least`` tokens."""
    size = count(benv.SYSTEM_PROMPT) + sum(count(flat(c)) for _, c in messages)
    if size <= edit.trigger:
        return list(messages)
    spots = clearable(messages, edit)
    freed = sum(count(flat([b])) - count(PLACEHOLDER) for _, _, b in spots)
    if not spots or freed < max(1, edit.clear_at_least):
        return list(messages)
    out: list[Message] = list(messages)
    gone = set()
    for i, j, block in spots:
        content = out[i][1]
        assert isinstance(content, list)  # clearable found a tool result in it
        blocks = list(content)
        gone.add(block.get("tool_use_id"))
        blocks[j] = dict(block, content=PLACEHOLDER)
        out[i] = (out[i][0], blocks)
    if edit.clear_tool_inputs:
        out = [(role, _without_inputs(c, gone)) for role, c in out]
    return out


def _without_inputs(content: Content, gone: set[Any]) -> Content:
    if isinstance(content, str):
        return content
    return [dict(b, input={}) if b.get("type") == "tool_use" and b.get("id") in gone else b
            for b in content]


def clearing_history(messages: Sequence[Message], edit: ClearToolUses, budget: int,
                     count: Callable[[str], int]) -> list[dict[str, Any]]:
    """After each user message: the session so far with the edit applied, then the
    oldest messages dropped over ``budget`` (full history's rule), as a request
    with Recap's breakpoint placement (the peers' and full history's)."""
    bodies = []
    for i, (role, _) in enumerate(messages):
        if role != "user":
            continue
        turns = [(r, flat(c)) for r, c in cleared(messages[:i + 1], edit, count=count)]
        total = count(benv.SYSTEM_PROMPT) + sum(count(t) for _, t in turns)
        while total > budget and len(turns) > 1:
            total -= count(turns.pop(0)[1])
        bodies.append(shaped([benv.SYSTEM_PROMPT], turns))
    return bodies
