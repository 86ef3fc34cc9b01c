"""LangChain's chat history on Recap: ``RecapChatMessageHistory``.

Install with ``pip install 'recap[langchain]'`` (langchain-core). A chain that
keeps its history with ``RunnableWithMessageHistory`` switches to Recap by
changing its ``get_session_history`` factory, nothing else::

    from langchain_core.runnables.history import RunnableWithMessageHistory
    from worker.integrations.langchain import RecapChatMessageHistory

    chat = RunnableWithMessageHistory(
        prompt | model,
        lambda session_id: RecapChatMessageHistory(session_id),   # the one line
        input_messages_key="question", history_messages_key="history")
    chat.invoke({"question": "..."}, config={"configurable": {"session_id": "c-42"}})

- ``messages`` is :func:`worker.api.context.build_context`'s context, converted:
  one ``SystemMessage`` (the ``system_prompt`` given here, the session's
  ``system`` rows and the rolling summary in its ``<SUMMARY_OF_PRIOR_CONTEXT>``
  block; left out when all are empty), then the window as alternating
  ``HumanMessage``/``AIMessage``, exactly as Claude would get it from
  ``as_request``. A session not stored yet has no messages.
- ``add_messages`` stores the batch in one transaction (all or nothing), then,
  if the batch holds an AI message, calls the ``after_reply`` hook once. Roles:
  human -> ``user``, ai -> ``assistant``, system -> ``system``, tool -> ``tool``
  (a ``ChatMessage`` keeps its role when it is one of these).
- ``clear()`` raises NotImplementedError: the history is the session's summary
  state (rolling summary, counters, memories, a job possibly running on it), not
  a list Recap can empty behind its own back. Start a new session id for a fresh
  conversation. ``RunnableWithMessageHistory`` never calls ``clear``.

Tools and blocks, as Recap stores them (Messages API content arrays):

- Text-only content is stored as text (blocks joined as LangChain's
  ``message.text`` joins them). Other content is stored as blocks and must be
  Anthropic-shaped (``image`` with a ``source``, ``document``, ``thinking``...,
  as ChatAnthropic produces them); anything else (``image_url``...) is refused
  with InvalidInput naming the message, block and field, writing nothing.
- An ``AIMessage``'s ``tool_calls`` become ``tool_use`` blocks and a
  ``ToolMessage`` a ``tool_result`` block answering its ``tool_call_id`` (an
  error status sets ``is_error``); they come back as ``AIMessage.tool_calls`` and
  ``ToolMessage``, each result right after the AI turn that called it.
  ``invalid_tool_calls`` are refused. A result whose call is not in the window
  (condensed, or never stored) comes back as a labelled human turn.
- ``RunnableWithMessageHistory`` runs ``add_messages`` in a callback whose errors
  LangChain logs ("Error in RootListenersTracer.on_llm_end callback: ...")
  instead of raising: a refused turn is not stored, and the reply still returns.

``messages`` is read once per object and reused until this object stores
messages, so that ``RunnableWithMessageHistory`` (which reads the history when a
turn starts and again when it ends, and without ``history_messages_key`` uses
the second read's length to tell history from new input) sees one snapshot even
when a summary is applied during the model call. The usual factory makes a new
object per call; to re-read on a kept object, make a new one.

Async: ``aget_messages``/``aadd_messages`` are langchain-core's defaults (the
sync calls in an executor).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from worker.api.context import build_context
from worker.api.ingest import add_message, after_reply, prepare
from worker.api.validate import check_session_id, check_user_id
from worker.core.assemble import system_text
from worker.core.validate import text_or_raise
from worker.db import transaction
from worker.errors import InvalidInput, SessionNotFound

try:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("worker.integrations.langchain needs langchain-core: "
                      "pip install 'recap[langchain]'") from exc

__all__ = ["RecapChatMessageHistory", "from_context", "to_row"]

# Checked in this order: the *Chunk classes subclass these.
_ROLES: tuple[tuple[type[BaseMessage], str], ...] = (
    (HumanMessage, "user"), (AIMessage, "assistant"), (SystemMessage, "system"),
    (ToolMessage, "tool"))


def _content(content: object, what: str) -> str | list[Any]:
    """The message's content to store: text-only content joined like LangChain's
    ``message.text``, anything else as a list of blocks (strings as text blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidInput(f"{what}: content must be a str or a list of blocks, "
                           f"got {type(content).__name__}")
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


class RecapChatMessageHistory(BaseChatMessageHistory):
    """The chat history of one Recap session (see the module's documentation).

    ``user_id``: the app's user the session belongs to (``add_message``'s), so
    its memories are the user's, shared by all their sessions.
    Raises InvalidInput for a bad ``session_id``, ``system_prompt`` or ``user_id``.
    """

    def __init__(self, session_id: str, *, system_prompt: str = "",
                 user_id: str | None = None) -> None:
        super().__init__()
        check_session_id(session_id)
        check_user_id(user_id)
        if not isinstance(system_prompt, str):
            raise InvalidInput(f"system_prompt must be a str, got {type(system_prompt).__name__}")
        text_or_raise(system_prompt, "system_prompt")
        self.session_id = session_id
        self.system_prompt = system_prompt
        self.user_id = user_id  # add_message's: memories are then the user's
        self._snapshot: list[BaseMessage] | None = None

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The context for the next model call (read once; see the module's docs)."""
        if self._snapshot is None:
            try:
                ctx = build_context(self.session_id, system_prompt=self.system_prompt,
                                    prompt_caching=False)
            except SessionNotFound:
                return []  # nothing stored yet: not a snapshot to keep
            self._snapshot = from_context(ctx)
        return list(self._snapshot)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store ``messages`` in one transaction, then run the hook if an AI message
        was among them. Raises InvalidInput (writing nothing) for a message Recap
        cannot store."""
        rows = [to_row(m, f"message {i}") for i, m in enumerate(messages)]
        self._snapshot = None
        if not rows:
            return
        with transaction() as db:
            for role, content in rows:
                add_message(self.session_id, role, content, user_id=self.user_id, db=db)
        if any(role == "assistant" for role, _ in rows):
            after_reply(self.session_id)

    def clear(self) -> None:
        """Not supported: see the module's documentation."""
        raise NotImplementedError(
            "RecapChatMessageHistory.clear(): Recap does not delete a session's history "
            "(its rolling summary, counters and memories are built from it, and a summary "
            "job may be running on it); use a new session id for a fresh conversation")

    def __repr__(self) -> str:
        return f"RecapChatMessageHistory({self.session_id!r})"
