"""Recap as LangChain v1 agent middleware: ``RecapMiddleware``.

Install with ``pip install 'recap-worker[langchain]'`` (langchain 1.x, LangGraph). A
drop-in for LangChain's ``SummarizationMiddleware``::

    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from recap.integrations.langchain_middleware import RecapMiddleware

    agent = create_agent(model, tools, middleware=[RecapMiddleware()],
                         checkpointer=InMemorySaver())
    agent.invoke({"messages": [{"role": "user", "content": "..."}]},
                 {"configurable": {"thread_id": "c-42"}})

The session is the run's LangGraph ``thread_id`` (or ``session_id=`` given here).

What it stores: every message of the agent's state, once, when the run ends
well: the user's message, each model turn with its tool calls and all their
results, the final reply, in one transaction. A run whose model call fails
stores nothing, so running it again stores the user's message once. Each
message is keyed by its LangGraph id (recap.api.turns), so a retried or resumed
step stores nothing twice. ``after_reply`` runs once per stored run; it only
queues a job: the summary is written by a Recap worker, never on the agent's
reply path.

What the model sees: Recap's context instead of the raw thread: one system
message (the agent's ``system_prompt``, the user's memories and the rolling
summary), then the recent window as messages, each tool result right after the
AI turn that called it, then the run's messages not stored yet. The context is
read at a turn's first model call; the tool steps of the same turn reuse it
with the turn's new messages appended (one read per user turn), unless they
would overflow the context budget, which reads it again. The agent's state (and
checkpointer) keeps the thread as LangGraph stores it; only the model's input
changes.

The recall tool: ``RecapMiddleware(recall_tool=True)`` registers
``recap_recall`` (or ``recall_tool="name"``) with the agent, a tool the model
calls with the ``tool_use_id`` a Recap stub answers, a ``message_id`` a recall
label named, or a ``query``; it answers with the archived original or the
matching passages of this run's session only, labelled by channel (recap.api.recall_tool),
and bad input as a short error text, never an exception in the agent's loop.

Sync (``invoke``) and async (``ainvoke``, on the asyncio API recap.api.aio,
PostgreSQL) both work. Without a checkpointer, pass only the new messages to
each run (the state starts empty every time).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, cast

from recap.api import context as sync_context
from recap.api.ingest import after_reply
from recap.api.recall_tool import (
    DESCRIPTION,
    TOOL_NAME,
    arecall_tool,
    recall_tool_definition,
)
from recap.api.recall_tool import recall_tool as recall_tool_text
from recap.api.turns import Turn, astore_turns, store_turns
from recap.api.validate import check_session_id, check_user_id
from recap.core.context.assemble import Context, system_text
from recap.errors import InvalidInput, SessionNotFound
from recap.llm.tokens import count_tokens

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState
    from langchain.agents.middleware.types import (
        ModelRequest,
        ModelResponse,
        PrivateStateAttr,
    )
    from langchain_core.messages import (
        AIMessage,
        AnyMessage,
        BaseMessage,
        SystemMessage,
        ToolMessage,
    )
    from langchain_core.tools import BaseTool, StructuredTool
    from langgraph.config import get_config
    from langgraph.runtime import Runtime
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("recap.integrations.langchain_middleware needs langchain 1.x: "
                      "pip install 'recap-worker[langchain]'") from exc

from recap.integrations.langchain_messages import from_context, to_turn

__all__ = ["RecapMiddleware", "RecapState", "TurnContext", "complete_prefix", "extend_context",
           "unstored"]

# Turns whose context is kept at once (one per session running a turn).
MAX_KEPT = 1024


class RecapState(AgentState[Any]):
    """The agent's state plus how many of its messages Recap has stored."""

    recap_stored: NotRequired[Annotated[int, PrivateStateAttr]]


def complete_prefix(messages: Sequence[BaseMessage], stored: int) -> tuple[list[BaseMessage], int]:
    """(the messages after the first ``stored`` that are complete, the new count).

    An AI turn with tool calls is complete once every call has its result; it
    and everything after it waits until then. A count beyond the list (another
    middleware removed messages) starts over from the beginning: the keys skip
    what was stored."""
    start = stored if 0 <= stored <= len(messages) else 0
    new = list(messages[start:])
    for i, m in enumerate(new):
        if isinstance(m, AIMessage) and m.tool_calls:
            answered = {t.tool_call_id for t in new[i + 1:] if isinstance(t, ToolMessage)}
            if not {c["id"] for c in m.tool_calls} <= answered:
                return new[:i], start + i
    return new, start + len(new)


@dataclass(frozen=True)
class TurnContext:
    """The context read at a turn's first model call, kept for its tool steps."""

    anchor: str  # the id of the state's last message when it was read
    prompt: str  # the agent's system prompt it was built with
    system: SystemMessage | None
    messages: list[BaseMessage]
    room: int  # tokens left under the session's context budget


def extend_context(kept: TurnContext | None, messages: Sequence[BaseMessage], prompt: str,
                   count: Callable[[str], int]) -> list[BaseMessage] | None:
    """The kept context plus the state's messages after its anchor, for a tool step
    of the same turn; None when the context must be read again (a new user turn,
    another prompt, the anchor gone, or the step's messages over the room left)."""
    if kept is None or kept.prompt != prompt or not messages \
            or not isinstance(messages[-1], ToolMessage):
        return None
    at = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].id == kept.anchor),
              None)
    if at is None:
        return None
    new = list(messages[at + 1:])
    if sum(count(m.text) + sum(count(str(c["args"])) for c in getattr(m, "tool_calls", []))
           for m in new) > kept.room:
        return None
    return kept.messages + new


def _stored(state: Any) -> int:
    return int(cast(RecapState, state).get("recap_stored", 0))


def unstored(messages: Sequence[BaseMessage], stored: int) -> list[BaseMessage]:
    """The state's messages Recap has not stored yet (this run's), after its context.
    A count beyond the list (another middleware removed messages) gives them all."""
    return list(messages[stored:] if 0 <= stored <= len(messages) else messages)


class RecapMiddleware(AgentMiddleware[AgentState[Any], Any]):
    """Recap's rolling summary for a ``create_agent`` agent (see the module's docs).

    ``session_id``: a fixed session (default: the run's ``thread_id``);
    ``user_id``: the app's user the session belongs to (memories are then the
    user's); ``recall_tool``: True registers the recall tool as ``recap_recall``,
    a string under that name. Raises InvalidInput for bad ids or tool name; a
    run with neither a ``session_id`` nor a ``thread_id`` raises InvalidInput
    before the model call.
    """

    state_schema = RecapState

    def __init__(self, session_id: str | None = None, *, user_id: str | None = None,
                 recall_tool: bool | str = False) -> None:
        super().__init__()
        if session_id is not None:
            check_session_id(session_id)
        check_user_id(user_id)
        self.session_id = session_id
        self.user_id = user_id
        self._turns: dict[str, TurnContext] = {}
        self.tools: list[BaseTool] = [self._recall_tool(recall_tool)] if recall_tool else []

    def _recall_tool(self, name: bool | str) -> BaseTool:
        """The recall tool, on the run's session (its ``thread_id``, or ``session_id``)."""
        named = TOOL_NAME if name is True else str(name)
        definition = recall_tool_definition(named)  # raises InvalidInput for a bad name

        def run(**tool_input: Any) -> str:
            return recall_tool_text(self._session(), tool_input)

        async def arun(**tool_input: Any) -> str:
            return await arecall_tool(self._session(), tool_input)

        # A JSON schema, not a model: the input reaches recall as the model sent it,
        # and what is wrong with it comes back as text, not a validation error.
        return StructuredTool(name=named, description=DESCRIPTION,
                              args_schema=definition["input_schema"], func=run, coroutine=arun)

    def _session(self) -> str:
        if self.session_id is not None:
            return self.session_id
        try:
            thread = get_config().get("configurable", {}).get("thread_id")
        except RuntimeError:
            thread = None
        if thread is None:
            raise InvalidInput("RecapMiddleware needs a session: pass session_id= or run the "
                               "agent with config={'configurable': {'thread_id': ...}}")
        sid = str(thread)
        check_session_id(sid)
        return sid

    def _pending(self, state: AgentState[Any]) -> tuple[list[Turn], int]:
        done, count = complete_prefix(state["messages"], _stored(state))
        return [to_turn(m, f"message {i}") for i, m in enumerate(done)], count

    # -- storing: when the agent ends (a failed model call ends nothing) -------------

    def _store(self, state: AgentState[Any]) -> dict[str, Any] | None:
        turns, count = self._pending(state)
        if not turns:
            return None
        sid = self._session()
        if store_turns(sid, turns, user_id=self.user_id).replied:
            after_reply(sid)
        return {"recap_stored": count}

    async def _astore(self, state: AgentState[Any]) -> dict[str, Any] | None:
        from recap.api import aio

        turns, count = self._pending(state)
        if not turns:
            return None
        sid = self._session()
        if (await astore_turns(sid, turns, user_id=self.user_id)).replied:
            await aio.after_reply(sid)
        return {"recap_stored": count}

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        self._forget_turn()
        return self._store(state)

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]
                           ) -> dict[str, Any] | None:
        self._forget_turn()
        return await self._astore(state)

    def _forget_turn(self) -> None:
        try:
            self._turns.pop(self._session(), None)
        except InvalidInput:
            pass

    # -- what the model reads ----------------------------------------------------------

    @staticmethod
    def _prompt(request: ModelRequest[Any]) -> str:
        message = request.system_message
        return message.text if message is not None else ""

    def _kept(self, request: ModelRequest[Any]) -> ModelRequest[Any] | None:
        """The request on the turn's kept context, or None to read it again."""
        kept = self._turns.get(self._session())
        messages = extend_context(kept, request.state["messages"], self._prompt(request),
                                  count_tokens)
        if kept is None or messages is None:
            return None
        return request.override(system_message=kept.system,
                                messages=cast("list[AnyMessage]", messages))

    def _with_context(self, request: ModelRequest[Any], ctx: Context) -> ModelRequest[Any]:
        messages = from_context(ctx)
        if messages and isinstance(messages[0], SystemMessage):
            messages = messages[1:]
        messages += unstored(request.state["messages"], _stored(request.state))
        system = system_text(ctx["system"])
        message = SystemMessage(content=system) if system else None
        state = request.state["messages"]
        anchor = state[-1].id if state else None
        if anchor:
            if len(self._turns) >= MAX_KEPT:
                self._turns.clear()
            self._turns[self._session()] = TurnContext(
                anchor, self._prompt(request), message, list(messages),
                int(ctx["budget"]) - int(ctx["tokens"]))
        return request.override(system_message=message,
                                messages=cast("list[AnyMessage]", messages))

    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
                        ) -> ModelResponse[Any]:
        kept = self._kept(request)
        if kept is not None:
            return handler(kept)
        try:
            ctx = sync_context.build_context(self._session(), system_prompt=self._prompt(request),
                                             prompt_caching=False)
        except SessionNotFound:
            return handler(request)  # nothing stored (an empty input): the raw request
        return handler(self._with_context(request, ctx))

    async def awrap_model_call(self, request: ModelRequest[Any],
                               handler: Callable[[ModelRequest[Any]],
                                                 Awaitable[ModelResponse[Any]]]
                               ) -> ModelResponse[Any]:
        from recap.api import aio

        kept = self._kept(request)
        if kept is not None:
            return await handler(kept)
        try:
            ctx = await aio.build_context(self._session(), system_prompt=self._prompt(request),
                                          prompt_caching=False)
        except SessionNotFound:
            return await handler(request)
        return await handler(self._with_context(request, ctx))
