"""Recap for pydantic-ai agents: the history processor ``recap_history`` and
``store_messages`` / ``astore_messages`` for what a run added.

Install with ``pip install 'recap-worker[pydantic-ai]'``::

    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from recap.integrations.pydantic_ai import recap_history, store_messages

    agent = Agent(model, capabilities=[ProcessHistory(recap_history("c-42"))])
    result = agent.run_sync("...")
    store_messages("c-42", result.new_messages())

(pydantic-ai 1.x takes the same function as ``history_processors=[...]``.)

What the model sees: before each model request, the history is Recap's
context, as messages without a ``run_id``: one request carrying the memories
and the rolling summary as a system prompt part, then the recent window (tool
calls as ``ToolCallPart``, each result as a ``ToolReturnPart`` in the request
right after), then this run's own messages as pydantic-ai made them (system
prompt, user prompt, this run's tool loop). History from earlier runs passed
as ``message_history`` is replaced by Recap's context.

What is stored: ``store_messages`` (sync) or ``astore_messages`` (asyncio)
stores a run's messages in one transaction: user prompts (text), the model's
text and tool calls as one assistant message, tool returns (and retry prompts
answering a tool call, as errors) as one tool message; system prompts, thinking
and Recap's own context messages are not stored. Each message is keyed by its
``run_id`` and position, so storing the same result twice stores it once. Then
``after_reply`` runs once if a model response was stored. Other parts (files,
built-in tools) raise InvalidInput naming the message and part, storing nothing.

Claude's server-tool blocks in the window (``server_tool_use``,
``web_search_tool_result`` and the other results, MCP calls) are not made into
``NativeToolCallPart``/``NativeToolReturnPart``: pydantic-ai sends a native
part back only as its own provider model built it (its tool kind and provider
details), and other providers refuse them; the assistant's text that used them
is sent, and the summary and recall read them.

The recall tool: ``recall_tool("c-42")`` is a ``Tool`` for the agent's ``tools``
(or a run's ``toolsets=[FunctionToolset([...])]``): the model calls it with the
``tool_use_id`` a Recap stub answers, a ``message_id`` a recall label named, or a
``query``, and reads the archived original or the matching passages of that
session only, labelled by channel (recap.api.recall_tool); bad input comes back
as a short error text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from recap.api.context import build_context
from recap.api.ingest import after_reply
from recap.api.recall_tool import DESCRIPTION, TOOL_NAME, recall_tool_definition
from recap.api.recall_tool import recall_tool as recall_tool_text
from recap.api.turns import Stored, Turn, astore_turns, store_turns
from recap.api.validate import check_session_id, check_user_id
from recap.core.context.assemble import Context, system_text
from recap.errors import InvalidInput, SessionNotFound

try:
    from pydantic_ai import RunContext, Tool
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelRequestPart,
        ModelResponse,
        ModelResponsePart,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("recap.integrations.pydantic_ai needs pydantic-ai: "
                      "pip install 'recap-worker[pydantic-ai]'") from exc

__all__ = ["astore_messages", "from_context", "recall_tool", "recap_history", "store_messages",
           "to_turns"]

# Marks the messages recap_history puts in front, so storing all_messages()
# never stores the context back.
CONTEXT_MARK = {"recap": "context"}


def _is_context(message: ModelMessage) -> bool:
    return (message.metadata or {}).get("recap") == "context"


def from_context(ctx: Context, lead: Sequence[SystemPromptPart] = ()) -> list[ModelMessage]:
    """``build_context``'s output as pydantic-ai messages (no ``run_id``), the
    ``lead`` system prompt parts (the agent's) first."""
    out: list[ModelMessage] = []
    system = system_text(ctx["system"])
    head = [*lead, SystemPromptPart(system)] if system else list(lead)
    if head:
        out.append(ModelRequest(parts=head, metadata=dict(CONTEXT_MARK)))
    names: dict[str, str] = {}
    for m in ctx["messages"]:
        content = m["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        # Server-tool blocks are skipped (see the module's docs): only text and tool blocks.
        if m["role"] == "assistant":
            parts: list[ModelResponsePart] = [TextPart(text)] if text else []
            for b in blocks:
                if b.get("type") == "tool_use":
                    names[b["id"]] = b["name"]
                    parts.append(ToolCallPart(b["name"], dict(b.get("input") or {}), b["id"]))
            out.append(ModelResponse(parts=parts, metadata=dict(CONTEXT_MARK)))
            continue
        request: list[ModelRequestPart] = [
            ToolReturnPart(names.get(b["tool_use_id"], "tool"), _result_text(b.get("content")),
                           b["tool_use_id"])
            for b in blocks if b.get("type") == "tool_result"]
        if text:
            request.append(UserPromptPart(text))
        if request:
            out.append(ModelRequest(parts=request, metadata=dict(CONTEXT_MARK)))
    return out


def _result_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def recap_history(session_id: str, *, system_prompt: str = ""
                  ) -> Callable[[RunContext[Any], list[ModelMessage]], list[ModelMessage]]:
    """A history processor: Recap's context, then this run's messages (see the
    module's docs). Sync, so pydantic-ai runs it in a thread: it works under
    ``run``, ``run_sync`` and any database Recap supports. Raises InvalidInput
    for a bad ``session_id``."""
    check_session_id(session_id)

    def process(ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        run = [m for m in messages if m.run_id is not None and m.run_id == ctx.run_id
               and not _is_context(m)]
        try:
            context = build_context(session_id, system_prompt=system_prompt,
                                     prompt_caching=False)
        except SessionNotFound:
            return run  # nothing stored yet
        # The agent's system prompt goes first, with Recap's: a system part after
        # the history would reach some models as a user turn.
        lead = [p for m in run if isinstance(m, ModelRequest) for p in m.parts
                if isinstance(p, SystemPromptPart)]
        rest = [replace(m, parts=[p for p in m.parts if not isinstance(p, SystemPromptPart)])
                if isinstance(m, ModelRequest) and any(isinstance(p, SystemPromptPart)
                                                       for p in m.parts) else m
                for m in run]
        return from_context(context, lead) + rest

    return process


def recall_tool(session_id: str, *, name: str = TOOL_NAME) -> Tool[Any]:
    """The recall tool on ``session_id`` (see the module's docs). Sync, so pydantic-ai
    runs it in a thread. Raises InvalidInput for a bad ``session_id`` or ``name``."""
    check_session_id(session_id)
    definition = recall_tool_definition(name)

    def recall(**tool_input: Any) -> str:
        return recall_tool_text(session_id, tool_input)

    # A JSON schema, not a signature: the input reaches recall as the model sent it,
    # and what is wrong with it comes back as text, not a retry.
    return Tool.from_schema(recall, name=name, description=DESCRIPTION,
                            json_schema=definition["input_schema"])


def _content(content: Any, what: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and all(isinstance(c, str) for c in content):
        return "".join(content)
    raise InvalidInput(f"{what}: Recap stores text user prompts, not "
                       f"{type(content).__name__} content")


def _request_turns(message: ModelRequest, what: str) -> list[tuple[str, Any]]:
    results: list[dict[str, Any]] = []
    texts: list[str] = []
    for j, part in enumerate(message.parts):
        where = f"{what} part {j} ({type(part).__name__})"
        if isinstance(part, SystemPromptPart):
            continue  # the agent's own prompt, sent again by every run
        if isinstance(part, UserPromptPart):
            texts.append(_content(part.content, where))
        elif isinstance(part, ToolReturnPart):
            results.append({"type": "tool_result", "tool_use_id": part.tool_call_id,
                            "content": part.model_response_str()})
        elif isinstance(part, RetryPromptPart):
            if part.tool_name and part.tool_call_id:
                results.append({"type": "tool_result", "tool_use_id": part.tool_call_id,
                                "content": part.model_response(), "is_error": True})
            else:
                texts.append(part.model_response())
        else:
            raise InvalidInput(f"{where}: Recap cannot store this part")
    out: list[tuple[str, Any]] = [("tool", results)] if results else []
    text = "".join(texts)
    return out + ([("user", text)] if text.strip() else [])


def _response_turn(message: ModelResponse, what: str) -> list[tuple[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for j, part in enumerate(message.parts):
        if isinstance(part, TextPart):
            if part.content:
                blocks.append({"type": "text", "text": part.content})
        elif isinstance(part, ToolCallPart):
            blocks.append({"type": "tool_use", "id": part.tool_call_id, "name": part.tool_name,
                           "input": part.args_as_dict()})
        elif isinstance(part, ThinkingPart):
            continue  # the provider's; not replayed
        else:
            raise InvalidInput(f"{what} part {j} ({type(part).__name__}): Recap cannot store "
                               "this part")
    if not blocks:
        return []
    if all(b["type"] == "text" for b in blocks):
        return [("assistant", "".join(b["text"] for b in blocks))]
    return [("assistant", blocks)]


def to_turns(messages: Sequence[ModelMessage]) -> list[Turn]:
    """A run's messages as Recap turns, keyed by ``run_id`` and position."""
    out: list[Turn] = []
    for i, message in enumerate(messages):
        what = f"message {i}"
        if isinstance(message, ModelRequest):
            if _is_context(message):
                continue
            made = _request_turns(message, what)
        elif isinstance(message, ModelResponse):
            if _is_context(message):
                continue
            made = _response_turn(message, what)
        else:
            raise InvalidInput(f"{what} must be a pydantic-ai ModelMessage, "
                               f"got {type(message).__name__}")
        at = _position(message, messages, i)
        for j, (role, content) in enumerate(made):
            key = (f"pa:{message.run_id}:{at}:{j}",) if message.run_id else ()
            out.append(Turn(role, content, key))
    return out


def _position(message: ModelMessage, messages: Sequence[ModelMessage], i: int) -> str:
    """Where the message sits in its run: its index among the run's messages, and
    a digest of it, so another selection of the same run keys it the same way."""
    same_run = [m for m in messages[:i] if m.run_id == message.run_id]
    ts = message.timestamp.isoformat() if message.timestamp else ""
    return f"{len(same_run)}:{ts}:{message.kind}"


def store_messages(session_id: str, messages: Sequence[ModelMessage], *,
                   user_id: str | None = None) -> Stored:
    """Store a run's messages (``result.new_messages()``) once, then run the hook if
    a model response was stored. Raises InvalidInput, storing nothing."""
    check_session_id(session_id)
    check_user_id(user_id)
    stored = store_turns(session_id, to_turns(messages), user_id=user_id)
    if stored.replied:
        after_reply(session_id)
    return stored


async def astore_messages(session_id: str, messages: Sequence[ModelMessage], *,
                          user_id: str | None = None) -> Stored:
    """:func:`store_messages` on the asyncio API (recap.api.aio, PostgreSQL)."""
    from recap.api import aio

    check_session_id(session_id)
    check_user_id(user_id)
    stored = await astore_turns(session_id, to_turns(messages), user_id=user_id)
    if stored.replied:
        await aio.after_reply(session_id)
    return stored
