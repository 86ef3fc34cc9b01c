"""The context for the chat app's next Claude call: rolling summary + active window.

``build_context(session_id, system_prompt=...)`` returns a :class:`Context`::

    {"system": str, "messages": [...], "tokens": int, "budget": int}

``system`` and ``messages`` are Anthropic Messages API fields; ``tokens`` (an
estimate of system + messages) and ``budget`` (RECAP_CONTEXT_BUDGET_TOKENS) are
for the app only and must NOT be sent to the SDK: pass ``**as_request(ctx)``
(optionally with the new user turn) instead of ``**ctx``.

How the stored window becomes a valid request (see :func:`assemble`):

- ``system`` = the app's prompt, then the window's ``system`` rows, then the
  user's memories in a ``<MEMORIES>`` block (see :func:`system_layout`), then the
  rolling summary in a ``<SUMMARY_OF_PRIOR_CONTEXT>`` block. The summary is the
  start of the conversation, so it sits last, right before the messages it leads
  into; ``system`` rows are instructions, so they join the app's instructions
  (their position among the turns is lost, as the API has no mid-conversation
  system turn). Parts are separated by a blank line.
- ``messages`` holds only user/assistant turns that alternate, starting with a
  user turn; nothing is empty. ``tool`` rows become user turns. Rows stored as
  content arrays come back as blocks, tool results paired with their calls and
  thinking passed back where the API requires it (see worker.core.replay);
  string rows come back as strings.
- The last turn may be the assistant's: the API then treats it as a prefill and
  continues it, and some models refuse prefills. The app normally appends its
  new user turn: ``as_request(ctx, user_message=...)`` does that.
- An empty window gives ``messages == []``, which the API refuses on its own;
  again the app's new user turn makes it valid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypedDict

from worker.core.recall import Candidate, choose
from worker.core.replay import SEPARATOR, TOOL_PREFIX, replay  # noqa: F401 (TOOL_PREFIX: public)
from worker.core.text import defuse, tag_opener
from worker.errors import InvalidInput

SUMMARY_TAG = "SUMMARY_OF_PRIOR_CONTEXT"
SUMMARY_OPEN = f"<{SUMMARY_TAG}>\n"
SUMMARY_CLOSE = f"\n</{SUMMARY_TAG}>"
MEMORIES_TAG = "MEMORIES"
MEMORIES_OPEN = f"<{MEMORIES_TAG}>\nWhat you know about the user from earlier conversations:\n"
MEMORIES_CLOSE = f"\n</{MEMORIES_TAG}>"
# A tool result stored as plain text (without the tool_use id of its call)
# cannot form a real ``tool_result`` block: it is replayed as a labelled user
# turn right after the assistant turn that called the tool (TOOL_PREFIX).
# The API requires the first turn to be the user's. When the window starts with
# an assistant turn (its user turn was summarized, or the app greets first) we
# add a minimal user turn instead of dropping the assistant's words or moving
# them into ``system``, which would misattribute them.
PLACEHOLDER_SUMMARIZED = "(earlier conversation summarized above)"
PLACEHOLDER_START = "(conversation start)"

# Anything that could open or close the summary or memories block, in any case or spacing.
_BLOCK_TAG_RE = tag_opener([SUMMARY_TAG, MEMORIES_TAG])


class Row(NamedTuple):
    """One stored message of the active window, with its stored token count and,
    for a content-array message, its blocks."""

    role: str
    content: str
    token_count: int
    blocks: list[dict[str, Any]] | None = None


class Context(TypedDict):
    system: str
    messages: list[dict[str, Any]]
    tokens: int
    budget: int


def neutralize(text: str) -> str:
    """``text`` with every summary- or memories-block tag defused, so it cannot end
    (or fake) either block."""
    return defuse(_BLOCK_TAG_RE, text)


def system_layout(instructions: list[str], *, memories: str | None,
                  summary: str | None) -> list[str]:
    """The order of ``system``'s parts, decided here only: the app's instructions,
    then the memories block, then the summary block (which leads into the messages)."""
    return [*instructions, *([memories] if memories else []), *([summary] if summary else [])]


def memories_block(memories: Sequence[Candidate], *, room: int,
                   count: Callable[[str], int]) -> tuple[str | None, int]:
    """(the ``<MEMORIES>`` block, its tokens) holding the best-ranked memories that
    fit ``room`` tokens with the block's wrappers; (None, 0) if none fits."""
    wrappers = count(MEMORIES_OPEN) + count(MEMORIES_CLOSE)
    safe = [dataclasses.replace(c, fact=neutralize(c.fact)) for c in memories]
    lines, used = choose(safe, budget=room - wrappers, count=count)
    if not lines:
        return None, 0
    return MEMORIES_OPEN + "\n".join(lines) + MEMORIES_CLOSE, used + wrappers


def assemble(system_prompt: str, rows: Sequence[Row], *, summary: str | None,
             summary_tokens: int, budget: int, count: Callable[[str], int],
             memories: Sequence[Candidate] = (), memory_budget: int = 0) -> Context:
    """The context from plain values (pure). ``rows`` are the active window, oldest first.

    ``tokens`` adds the stored counts (``summary_tokens``, each row's
    ``token_count``) to ``count`` of the app's prompt and of our own wrappers;
    stored text is never re-tokenized. ``memories`` (live candidates, ranked
    here) fill at most ``memory_budget`` tokens and only what the rest leaves of
    ``budget``: they never push the context over it. Raises InvalidInput on an
    unknown role.
    """
    tokens = 0
    system_parts: list[str] = []
    if system_prompt.strip():
        system_parts.append(system_prompt)
        tokens += count(system_prompt)

    turn_rows: list[tuple[str, str, list[dict[str, Any]] | None]] = []
    for row in rows:
        if not row.content.strip():
            continue  # ingest refuses blank text; a row written otherwise must not break the call
        if row.role == "system":
            system_parts.append(neutralize(row.content))
            tokens += row.token_count
            continue
        if row.role not in ("user", "assistant", "tool"):
            raise InvalidInput(f"message with unknown role {row.role!r}")
        tokens += row.token_count
        turn_rows.append((row.role, row.content, row.blocks))
    messages, wrappers = replay(turn_rows, count=count)
    tokens += wrappers

    has_summary = bool(summary and summary.strip())
    summary_block = None
    if has_summary:
        assert summary is not None
        summary_block = SUMMARY_OPEN + neutralize(summary) + SUMMARY_CLOSE
        tokens += summary_tokens + count(SUMMARY_OPEN) + count(SUMMARY_CLOSE)

    if messages and messages[0]["role"] == "assistant":
        placeholder = PLACEHOLDER_SUMMARIZED if has_summary else PLACEHOLDER_START
        messages.insert(0, {"role": "user", "content": placeholder})
        tokens += count(placeholder)

    others = len(system_parts) + (1 if summary_block else 0)
    tokens += count(SEPARATOR) * max(0, others - 1)
    block = None
    if memories and memory_budget > 0:
        gap = count(SEPARATOR) if others else 0
        block, used = memories_block(memories, count=count,
                                     room=min(memory_budget, budget - tokens - gap))
        tokens += used + (gap if block else 0)

    return Context(system=SEPARATOR.join(system_layout(
        system_parts, memories=block, summary=summary_block)), messages=messages, tokens=tokens,
                   budget=budget)


def as_request(ctx: Context, *, user_message: str | None = None) -> dict[str, Any]:
    """Only the Messages API fields of ``ctx``, for ``client.messages.create(**...)``.

    With ``user_message``, it is appended as the new user turn (merged into a
    trailing user turn, e.g. a tool result). An empty ``system`` is left out.
    Raises InvalidInput if ``user_message`` is blank.
    """
    messages = [dict(m) for m in ctx["messages"]]
    if user_message is not None:
        if not isinstance(user_message, str) or not user_message.strip():
            raise InvalidInput("user_message is empty or not a str")
        if messages and messages[-1]["role"] == "user":
            last = messages[-1]["content"]
            messages[-1]["content"] = (last + SEPARATOR + user_message if isinstance(last, str)
                                       else [*last, {"type": "text", "text": user_message}])
        else:
            messages.append({"role": "user", "content": user_message})
    request: dict[str, Any] = {"messages": messages}
    if ctx["system"]:
        request["system"] = ctx["system"]
    return request
