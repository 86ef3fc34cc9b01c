"""LangChain's chat history on Recap: ``RecapChatMessageHistory``.

Install with ``pip install 'recap[langchain]'`` (langchain-core). A chain that
keeps its history with ``RunnableWithMessageHistory`` switches to Recap by
changing its ``get_session_history`` factory, nothing else::

    from langchain_core.runnables.history import RunnableWithMessageHistory
    from worker.api.langchain import RecapChatMessageHistory

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

Limitations, as Recap stores messages today (plain text per message):

- Content blocks are joined as LangChain's ``message.text`` joins them; a block
  that is not text (image, ``tool_use``, thinking, ...) and an AI message with
  ``tool_calls`` are refused with InvalidInput naming it, writing nothing.
- A tool result is stored as a ``tool`` row with its text only: the
  ``tool_call_id`` is dropped, so it cannot come back as a ``ToolMessage`` (a
  ``ToolMessage`` must answer a tool call of the AI message before it, which
  Recap does not keep). It comes back as ``build_context`` renders it: a
  ``HumanMessage`` labelled ``[tool result]`` after the AI turn that asked for it.
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
from worker.api.ingest import add_message, after_reply
from worker.api.validate import check_message, check_session_id
from worker.core.assemble import content_text, system_text
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
    raise ImportError("worker.api.langchain needs langchain-core: "
                      "pip install 'recap[langchain]'") from exc

__all__ = ["RecapChatMessageHistory", "from_context", "to_row"]

# Checked in this order: the *Chunk classes subclass these.
_ROLES: tuple[tuple[type[BaseMessage], str], ...] = (
    (HumanMessage, "user"), (AIMessage, "assistant"), (SystemMessage, "system"),
    (ToolMessage, "tool"))


def _text(content: object, what: str) -> str:
    """The message's text: a str as is, a list of blocks joined like LangChain's
    ``message.text``; InvalidInput for a block that is not text."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidInput(f"{what}: content must be a str or a list of blocks, "
                           f"got {type(content).__name__}")
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            if not isinstance(block.get("text"), str):
                raise InvalidInput(f"{what}: a text block without a str 'text'")
            parts.append(block["text"])
        else:
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            raise InvalidInput(f"{what}: content block of type {kind!r}; Recap stores "
                               "text only (join or drop other blocks before storing)")
    return "".join(parts)


def to_row(message: object, what: str = "message") -> tuple[str, str]:
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
    if isinstance(message, AIMessage) and (message.tool_calls or message.invalid_tool_calls):
        raise InvalidInput(f"{what}: tool_calls cannot be stored yet (Recap keeps the text "
                           "of each message only)")
    content = _text(message.content, what)
    try:
        check_message(role, content, False)
    except InvalidInput as exc:
        raise InvalidInput(f"{what}: {exc}") from None
    return role, content


def from_context(ctx: Any) -> list[BaseMessage]:
    """``build_context``'s output as LangChain messages (system first, if any), as
    plain text: prompt-caching breakpoints are dropped, as LangChain's models
    differ in whether and how they take them."""
    system = system_text(ctx["system"])
    out: list[BaseMessage] = [SystemMessage(content=system)] if system else []
    for m in ctx["messages"]:
        cls = HumanMessage if m["role"] == "user" else AIMessage
        out.append(cls(content=content_text(m["content"])))
    return out


class RecapChatMessageHistory(BaseChatMessageHistory):
    """The chat history of one Recap session (see the module's documentation).

    Raises InvalidInput for a bad ``session_id`` or ``system_prompt``.
    """

    def __init__(self, session_id: str, *, system_prompt: str = "") -> None:
        super().__init__()
        check_session_id(session_id)
        if not isinstance(system_prompt, str):
            raise InvalidInput(f"system_prompt must be a str, got {type(system_prompt).__name__}")
        text_or_raise(system_prompt, "system_prompt")
        self.session_id = session_id
        self.system_prompt = system_prompt
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
                add_message(self.session_id, role, content, db=db)
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
