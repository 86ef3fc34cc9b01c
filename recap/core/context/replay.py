"""Stored user/assistant/tool rows as Messages API turns (pure; used by
:func:`recap.core.context.assemble.assemble`).

- Rows become turns of alternating roles; ``tool`` rows are user turns. Rows of
  one role in a row merge into one turn.
- A turn made only of string rows stays a string (parts joined by a blank
  line), as before content blocks existed; a turn with any block row is a list
  of blocks (string rows become text blocks).
- Every ``tool_result`` sits first in the user turn right after the assistant
  turn holding its ``tool_use``; every ``tool_use`` is answered in the next user
  turn. A block that cannot be paired (its partner was condensed, or the app
  never answered the call) is replayed as its text rendering, so the request is
  always valid. The last assistant turn may hold unanswered calls: the app is
  about to add their results.
- A server tool's result (web search, code execution, ...) follows its
  ``server_tool_use`` in the same assistant turn, an ``mcp_tool_result`` its
  ``mcp_tool_use``: one without its partner there is replayed as its text
  rendering (a call may stay unanswered in the last assistant turn, which the
  API continues).
- A ``compaction`` block with a summary stands for everything before it: the API
  takes it only as the first block of the conversation, and only the newest
  one. So the replay starts at the newest such block (:func:`compaction_start`;
  the rows before it stay stored and are folded as usual), and a compaction
  without a summary anywhere else, a no-op to the API, is left out.
- ``thinking``/``redacted_thinking`` blocks are passed back only in the
  assistant turn of an unfinished tool loop (the last assistant turn holding
  tool_use, when it is the last turn or only its results follow; or a last turn
  holding server tool calls, which the API may continue), where the API
  requires them unchanged; elsewhere the API ignores them, so they are dropped.
- Legacy ``tool`` rows (text stored without a tool_use id) are labelled user
  turns: TOOL_PREFIX + text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from recap.core.content.blocks import SERVER_RESULTS
from recap.core.content.render import digest

SEPARATOR = "\n\n"
TOOL_PREFIX = "[tool result]\n"
_THINKING = ("thinking", "redacted_thinking")
# A call answered in its own assistant turn, and what answers it.
_SERVER_CALLS = ("server_tool_use", "mcp_tool_use")
_SERVER_ANSWERS = (*SERVER_RESULTS, "mcp_tool_result")
Part = str | dict[str, Any]


def _api_role(role: str) -> str:
    return "assistant" if role == "assistant" else "user"


def _row_parts(role: str, content: str, blocks: list[dict[str, Any]] | None) -> list[Part]:
    if blocks is not None:
        return [dict(b) for b in blocks]
    return [TOOL_PREFIX + content if role == "tool" else content]


def _summarizes(part: Part) -> bool:
    """Whether ``part`` is a compaction block with a summary."""
    return (isinstance(part, dict) and part.get("type") == "compaction"
            and isinstance(part.get("content"), str))


def compaction_start(rows: Sequence[tuple[str, str, list[dict[str, Any]] | None]]) -> int:
    """The index of the row holding the newest compaction block with a summary, where
    the replay of ``rows`` starts (0 without one)."""
    for i in range(len(rows) - 1, -1, -1):
        if any(_summarizes(b) for b in rows[i][2] or ()):
            return i
    return 0


def _from_compaction(prepared: list[tuple[str, list[Part]]]) -> None:
    """Start the turns at the newest compaction block with a summary, and leave out
    every other compaction block (in place)."""
    at = [(i, k) for i, (_, parts) in enumerate(prepared) for k, p in enumerate(parts)
          if _summarizes(p)]
    if at:
        row, k = at[-1]
        for i in range(row):
            prepared[i][1].clear()
        prepared[row][1][:k] = []
    first = next((p for _, parts in prepared for p in parts), None)
    for _, parts in prepared:
        parts[:] = [p for p in parts if p is first or not (
            isinstance(p, dict) and p.get("type") == "compaction")]


def starts_with_compaction(messages: list[dict[str, Any]]) -> bool:
    """Whether the first turn of ``messages`` opens with a compaction block (which
    the API takes as the start of the conversation: nothing goes before it)."""
    content = messages[0]["content"] if messages else None
    return (isinstance(content, list) and bool(content)
            and content[0].get("type") == "compaction")


def _merge(rows: list[tuple[str, list[Part]]]) -> list[tuple[str, list[Part]]]:
    turns: list[tuple[str, list[Part]]] = []
    for role, parts in rows:
        if not parts:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(parts)
        else:
            turns.append((role, list(parts)))
    return turns


def _ids(parts: list[Part], kind: str, key: str) -> list[str]:
    return [p[key] for p in parts if isinstance(p, dict) and p.get("type") == kind]


def _as_text(block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "text", "text": digest([block]).text}


def _loop_turn(turns: list[tuple[str, list[Part]]]) -> int | None:
    """Index of the assistant turn of an unfinished tool loop, if any: one of the
    app's tools waiting for its results, or a last turn of server tool calls
    (a paused turn the API continues as it is)."""
    if turns and turns[-1][0] == "assistant" and any(
            isinstance(p, dict) and p.get("type") in _SERVER_CALLS for p in turns[-1][1]):
        return len(turns) - 1
    for t in (len(turns) - 1, len(turns) - 2):
        if t >= 0 and turns[t][0] == "assistant" and _ids(turns[t][1], "tool_use", "id"):
            after = turns[t + 1:]
            if not after or _ids(after[0][1], "tool_result", "tool_use_id"):
                return t
            return None
    return None


def _pair_server(parts: list[Part], *, last: bool) -> None:
    """Server tool and MCP calls and their results paired within one assistant turn
    (in place): each result after its call, each call answered once (or, in the
    last turn, not yet)."""
    blocks = [(k, p) for k, p in enumerate(parts) if isinstance(p, dict)]
    answers: dict[str, int] = {}
    for k, p in blocks:
        if p.get("type") in _SERVER_ANSWERS:
            answers.setdefault(p["tool_use_id"], k)
    calls: set[str] = set()
    for k, p in blocks:
        if p.get("type") in _SERVER_CALLS:
            ident = p["id"]
            paired = answers.get(ident, -1) > k and ident not in calls
            if not (paired or (last and ident not in answers and ident not in calls)):
                parts[k] = _as_text(p)
            calls.add(ident)
        elif p.get("type") in _SERVER_ANSWERS:
            if not (p["tool_use_id"] in calls and answers[p["tool_use_id"]] == k):
                parts[k] = _as_text(p)


def _pair(turns: list[tuple[str, list[Part]]]) -> None:
    """Make tool_use and tool_result blocks pair up as the API requires (in place)."""
    for t, (role, parts) in enumerate(turns):
        if role == "assistant":
            answered = set(_ids(turns[t + 1][1], "tool_result", "tool_use_id")
                           if t + 1 < len(turns) else ())
            last = t == len(turns) - 1
            parts[:] = [_as_text(p) if (isinstance(p, dict) and p.get("type") == "tool_use"
                                        and not last and p["id"] not in answered) else p
                        for p in parts]
            _pair_server(parts, last=last)
            continue
        calls = set(_ids(turns[t - 1][1], "tool_use", "id")) if t else set()
        results: list[Part] = []
        rest: list[Part] = []
        for p in parts:
            if isinstance(p, dict) and p.get("type") == "tool_result":
                if p["tool_use_id"] in calls:
                    calls.discard(p["tool_use_id"])  # a second answer is replayed as text
                    results.append(p)
                else:
                    rest.append(_as_text(p))
            else:
                rest.append(p)
        parts[:] = results + rest


def _content(parts: list[Part]) -> str | list[dict[str, Any]]:
    if all(isinstance(p, str) for p in parts):
        return SEPARATOR.join(p for p in parts if isinstance(p, str))
    return [{"type": "text", "text": p} if isinstance(p, str) else p for p in parts]


def replay(rows: Sequence[tuple[str, str, list[dict[str, Any]] | None]], *,
           count: Callable[[str], int]) -> tuple[list[dict[str, Any]], int]:
    """(messages, tokens of the wrappers added) from ``(role, content, blocks)``
    rows, oldest first (no ``system`` rows; blank ones already left out). The
    first message may be the assistant's: the caller adds its placeholder, unless
    it opens with a compaction (:func:`starts_with_compaction`). The caller
    passes the rows from :func:`compaction_start` on, so the tokens it counts
    are those of what is replayed."""
    prepared = [(_api_role(role), _row_parts(role, content, blocks))
                for role, content, blocks in rows]
    _from_compaction(prepared)
    extra = sum(count(TOOL_PREFIX)
                for (role, _, blocks), (_, parts) in zip(rows, prepared, strict=True)
                if role == "tool" and blocks is None and parts)
    turns = _merge(prepared)
    keep = _loop_turn(turns)
    kept = {id(p) for p in turns[keep][1]} if keep is not None else set()
    for _, parts in prepared:  # thinking leaves every turn but the loop's
        parts[:] = [p for p in parts if not (isinstance(p, dict) and p.get("type") in _THINKING
                                             and id(p) not in kept)]
    turns = _merge(prepared)
    _pair(turns)
    messages: list[dict[str, Any]] = []
    for role, parts in turns:
        strings = sum(1 for p in parts if isinstance(p, str))
        extra += count(SEPARATOR) * max(0, strings - 1) if strings == len(parts) else 0
        messages.append({"role": role, "content": _content(parts)})
    if messages and messages[-1]["role"] == "assistant":
        _strip_end(messages[-1])
    return messages, extra


def _strip_end(message: dict[str, Any]) -> None:
    """The API refuses a final assistant turn that ends in whitespace."""
    content = message["content"]
    if isinstance(content, str):
        message["content"] = content.rstrip()
        return
    last = content[-1]
    if last.get("type") == "text":
        text = last["text"].rstrip()
        if text:
            content[-1] = {**last, "text": text}
        else:
            content.pop()
