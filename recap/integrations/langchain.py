"""LangChain's chat history on Recap: ``RecapChatMessageHistory`` (deprecated).

Deprecated: ``BaseChatMessageHistory`` and ``RunnableWithMessageHistory`` are
deprecated since langchain-core 1.0 and go in 2.0. New agents use
``RecapMiddleware`` (recap.integrations.langchain_middleware) with
``create_agent``. This class keeps working while langchain-core is below 2.0 and
warns once per process (DeprecationWarning) when first built.

Install with ``pip install 'recap-worker[langchain]'`` (langchain-core). A chain that
keeps its history with ``RunnableWithMessageHistory`` switches to Recap by
changing its ``get_session_history`` factory, nothing else::

    from langchain_core.runnables.history import RunnableWithMessageHistory
    from recap.integrations.langchain import RecapChatMessageHistory

    chat = RunnableWithMessageHistory(
        prompt | model,
        lambda session_id: RecapChatMessageHistory(session_id),   # the one line
        input_messages_key="question", history_messages_key="history")
    chat.invoke({"question": "..."}, config={"configurable": {"session_id": "c-42"}})

- ``messages`` is :func:`recap.api.context.build_context`'s context, converted:
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

import warnings
from collections.abc import Sequence

from recap.api.context import build_context
from recap.api.ingest import add_message, after_reply
from recap.api.validate import check_session_id, check_user_id
from recap.core.validate import text_or_raise
from recap.db import transaction
from recap.errors import InvalidInput, SessionNotFound

try:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import BaseMessage
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("recap.integrations.langchain needs langchain-core: "
                      "pip install 'recap-worker[langchain]'") from exc

from recap.integrations.langchain_messages import from_context, to_row

__all__ = ["RecapChatMessageHistory", "from_context", "to_row"]

DEPRECATION = ("RecapChatMessageHistory is deprecated (LangChain deprecated "
               "RunnableWithMessageHistory in langchain-core 1.0 and removes it in 2.0): "
               "use recap.integrations.langchain_middleware.RecapMiddleware with "
               "langchain.agents.create_agent; see docs/INTEGRATIONS.md")
WARNED = {"done": False}  # whether this process has warned (tests reset it)


def warn_deprecated() -> None:
    """Warn, once per process, that this adapter is deprecated."""
    if not WARNED["done"]:
        WARNED["done"] = True
        warnings.warn(DEPRECATION, DeprecationWarning, stacklevel=3)


class RecapChatMessageHistory(BaseChatMessageHistory):
    """The chat history of one Recap session (see the module's documentation).

    ``user_id``: the app's user the session belongs to (``add_message``'s), so
    its memories are the user's, shared by all their sessions.
    Raises InvalidInput for a bad ``session_id``, ``system_prompt`` or ``user_id``.
    """

    def __init__(self, session_id: str, *, system_prompt: str = "",
                 user_id: str | None = None) -> None:
        super().__init__()
        warn_deprecated()
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
