"""Recap as an OpenAI Agents SDK session: ``RecapSession``.

Install with ``pip install 'recap-worker[openai-agents]'``. Used like ``SQLiteSession``::

    from agents import Agent, Runner
    from recap.integrations.openai_agents import RecapSession

    result = await Runner.run(agent, "...", session=RecapSession("c-42"))

- ``add_items`` stores the items the Runner hands it, in one transaction: user
  and system messages as they are (text), the model's messages and function
  calls of one response as one assistant message (``tool_use`` blocks), the
  function outputs that follow as one tool message (``tool_result`` blocks), so a
  call and its output fold together or not at all. Reasoning items are not
  stored (they are the provider's, and go stale). Items carrying an id (model
  outputs; outputs by their ``call_id``) are stored once per session, so items
  handed over again (a resumed run) are skipped. ``after_reply`` runs once per
  batch that holds a model turn; the summary is written by a Recap worker.
  The Runner hands over a run's items step by step (its input before the first
  model call, then each step's calls and outputs): they are held in memory and
  stored together with the model's final message, so a run whose model call
  fails stores nothing and running it again stores the user's message once.
  Held items that hold model output when the next run starts (a run that ended
  on a tool's output, ``tool_use_behavior``) are stored then; held input alone
  is dropped. Use one ``RecapSession`` per run, as below, so a failed run's
  items die with it.
- ``get_items`` returns Recap's context as items: first one ``system`` message
  with the user's memories and the rolling summary (context, not a user turn),
  then the recent window, each ``function_call_output`` right after its
  ``function_call``. ``limit`` keeps the newest items of the window (never an
  output without its call) after that first item.
- ``pop_item`` removes the newest stored message (a model turn's items are one
  message) and returns its last item; ``None`` when the window is empty. A
  point inside summarized history needs the archive (recap.sessions.rewind).
- ``clear_session`` forgets the session (``recap.forget``): its messages,
  summary, memories and audit rows.

- ``recall_tool()`` is the recall tool on this session, a ``FunctionTool`` to
  add to the Agent (``agent.clone(tools=[*agent.tools, session.recall_tool()])``):
  the model calls it with the ``tool_use_id`` a Recap stub answers, a
  ``message_id`` a recall label named, or a ``query``, and reads the archived
  original or the matching passages of this session only, labelled by channel
  (recap.api.recall_tool); bad input comes back as a short error text.

All methods are async (the asyncio API, PostgreSQL). Other item types (hosted
tool calls, images) raise InvalidInput naming the item, storing nothing. Claude's
server-tool blocks in the window (``server_tool_use``, ``web_search_tool_result``
and the other results, MCP calls) are not sent as items: the Responses API's
hosted-tool items are OpenAI's own tools, with ids OpenAI issued, and a
chat-completions model takes none of them; the assistant's text that used them
is sent, and the summary and recall read them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from recap.api.recall_tool import DESCRIPTION, TOOL_NAME, arecall_tool, recall_tool_definition
from recap.api.turns import Turn, astore_turns, drop_keys_after, newest_messages
from recap.api.validate import check_session_id, check_user_id
from recap.core.context.assemble import Context, system_text
from recap.errors import InvalidInput, SessionNotFound
from recap.sessions.forget import forget
from recap.sessions.rewind import rewind

try:
    from agents import FunctionTool
    from agents.memory.session import SessionABC
    from agents.memory.session_settings import SessionSettings
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("recap.integrations.openai_agents needs the OpenAI Agents SDK: "
                      "pip install 'recap-worker[openai-agents]'") from exc

__all__ = ["RecapSession", "to_items", "to_turns"]

Item = dict[str, Any]


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def _plain(item: Any) -> Item:
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        out = dump(exclude_unset=True)
        if isinstance(out, dict):
            return out
    raise InvalidInput(f"an item must be a dict or an SDK model, got {type(item).__name__}")


def _text(content: Any, what: str) -> str:
    """A message's text: a string, or its input_text/output_text/text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            kind = _field(part, "type")
            if kind in ("input_text", "output_text", "text"):
                parts.append(str(_field(part, "text") or ""))
            elif kind == "refusal":
                parts.append(str(_field(part, "refusal") or ""))
            else:
                raise InvalidInput(f"{what}: content part {i} of type {kind!r} cannot be "
                                   "stored (text only)")
        return "".join(parts)
    raise InvalidInput(f"{what}: content must be a str or a list of parts, "
                       f"got {type(content).__name__}")


def _arguments(raw: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        parsed = None
    # The Messages API wants an object; anything else keeps its text under one key.
    return parsed if isinstance(parsed, dict) else {"arguments": raw}


def _one(item: Item, what: str) -> tuple[str, list[Item], str | None]:
    """(role, blocks, key) for one item; role "" for an item not stored."""
    kind = item.get("type")
    ident = item.get("id")
    if kind == "reasoning":
        return "", [], None
    if kind == "function_call":
        call = item.get("call_id") or ident
        if not call or not item.get("name"):
            raise InvalidInput(f"{what}: a function_call needs a call_id and a name")
        return "assistant", [{"type": "tool_use", "id": str(call), "name": str(item["name"]),
                              "input": _arguments(item.get("arguments", "{}"))}], \
            f"oa:call:{call}"
    if kind == "function_call_output":
        call = item.get("call_id")
        if not call:
            raise InvalidInput(f"{what}: a function_call_output needs a call_id")
        output = item.get("output", "")
        text = output if isinstance(output, str) else _text(output, what)
        return "tool", [{"type": "tool_result", "tool_use_id": str(call), "content": text}], \
            f"oa:out:{call}"
    role = item.get("role")
    if kind in (None, "message") and role in ("user", "assistant", "system", "developer"):
        text = _text(item.get("content", ""), what)
        stored_role = "system" if role == "developer" else str(role)
        key = f"oa:{ident}" if ident and role == "assistant" else None
        return stored_role, [{"type": "text", "text": text}] if text.strip() else [], key
    raise InvalidInput(f"{what}: items of type {kind!r} (role {role!r}) cannot be stored; "
                       "Recap stores messages, function calls and their outputs")


def to_turns(items: Sequence[Any]) -> list[Turn]:
    """The items as Recap turns: consecutive items of one role merged (a response's
    message and function calls; the outputs that follow), keyed by their ids."""
    turns: list[Turn] = []
    for i, raw in enumerate(items):
        role, blocks, key = _one(_plain(raw), f"item {i}")
        if not role or not blocks:
            continue
        keys = (key,) if key else ()
        last = turns[-1] if turns else None
        # Users' and system messages stay one per item; a model turn and its
        # outputs are one message each.
        if last is not None and last.role == role and role in ("assistant", "tool"):
            merged = list(last.content) if isinstance(last.content, list) else []
            turns[-1] = Turn(role, merged + blocks, last.keys + keys)
            continue
        turns.append(Turn(role, blocks, keys))
    return [t if t.role in ("assistant", "tool") else
            Turn(t.role, "".join(b["text"] for b in t.content if isinstance(b, dict)), t.keys)
            for t in turns]


def _message_items(role: str, content: Any) -> list[Item]:
    if isinstance(content, str):
        return [{"role": role, "content": content}] if content else []
    out: list[Item] = []
    text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
    # Server-tool blocks are skipped (see the module's docs): no item carries them.
    if role == "assistant":
        if text:
            out.append({"role": "assistant", "content": text})
        out.extend({"type": "function_call", "call_id": b["id"], "name": b["name"],
                    "arguments": json.dumps(b.get("input", {}))}
                   for b in content if b.get("type") == "tool_use")
        return out
    for b in content:
        if b.get("type") == "tool_result":
            result = b.get("content", "")
            if isinstance(result, list):
                result = "".join(p.get("text", "") for p in result if isinstance(p, dict))
            out.append({"type": "function_call_output", "call_id": b["tool_use_id"],
                        "output": str(result)})
    if text:
        out.append({"role": "user", "content": text})
    return out


def to_items(ctx: Context) -> list[Item]:
    """``build_context``'s output as Responses API input items: one leading system
    message (memories, summary), then the window."""
    system = system_text(ctx["system"])
    out: list[Item] = [{"role": "system", "content": system}] if system else []
    for m in ctx["messages"]:
        out.extend(_message_items(m["role"], m["content"]))
    return out


def _newest(items: list[Item], limit: int) -> list[Item]:
    """The newest ``limit`` items, never starting with an output whose call is cut."""
    tail = items[-limit:] if limit > 0 else []
    while tail and tail[0].get("type") == "function_call_output":
        tail = tail[1:]
    return tail


class RecapSession(SessionABC):
    """One Recap session as an Agents SDK ``Session`` (see the module's documentation).

    ``user_id``: the app's user the session belongs to (memories are then the
    user's). Raises InvalidInput for bad ids.
    """

    def __init__(self, session_id: str, *, user_id: str | None = None,
                 session_settings: SessionSettings | None = None) -> None:
        check_session_id(session_id)
        check_user_id(user_id)
        self.session_id = session_id
        self.user_id = user_id
        self.session_settings = session_settings
        self._held: list[Turn] = []  # the run's input, until the model's answer

    async def get_items(self, limit: int | None = None) -> list[Any]:
        from recap.api import aio

        held, self._held = self._held, []
        if any(t.role in ("assistant", "tool") for t in held):  # it ended on a tool's output
            await self._store(held)

        try:
            ctx = await aio.build_context(self.session_id, system_prompt="",
                                          prompt_caching=False)
        except SessionNotFound:
            return []
        items = to_items(ctx)
        if limit is None:
            return list(items)
        head = items[:1] if items and items[0].get("role") == "system" else []
        return head + _newest(items[len(head):], limit)

    async def add_items(self, items: list[Any]) -> None:
        self._held.extend(to_turns(items))
        last = self._held[-1] if self._held else None
        if last is None or last.role != "assistant" or any(
                isinstance(b, dict) and b.get("type") == "tool_use" for b in last.content):
            return  # the run goes on (or its model call fails): stored at its end, or never
        held, self._held = self._held, []
        await self._store(held)

    async def _store(self, turns: list[Turn]) -> None:
        from recap.api import aio

        stored = await astore_turns(self.session_id, turns, user_id=self.user_id)
        if stored.replied:
            await aio.after_reply(self.session_id)

    async def pop_item(self) -> Any | None:
        return await asyncio.to_thread(self._pop)

    def _pop(self) -> Item | None:
        newest = newest_messages(self.session_id, 2)
        if not newest:
            return None
        point = newest[1].id if len(newest) > 1 else 0
        try:
            rewind(self.session_id, point)
        except SessionNotFound:
            return None
        drop_keys_after(self.session_id, point)
        items = _message_items(newest[0].role, newest[0].blocks or newest[0].content)
        return items[-1] if items else None

    async def clear_session(self) -> None:
        await asyncio.to_thread(forget, session_id=self.session_id)

    def recall_tool(self, name: str = TOOL_NAME) -> FunctionTool:
        """The recall tool on this session, for the Agent's ``tools`` (see the module's
        docs). Raises InvalidInput for a ``name`` the model API would refuse."""
        definition = recall_tool_definition(name)
        session_id = self.session_id

        async def invoke(_: Any, arguments: str) -> str:
            try:
                tool_input = json.loads(arguments or "{}")
            except json.JSONDecodeError:
                tool_input = None  # recall_tool names the problem
            return await arecall_tool(session_id, tool_input)

        # Not strict: every field is optional, and recall checks the input itself.
        return FunctionTool(name=name, description=DESCRIPTION,
                            params_json_schema=definition["input_schema"],
                            on_invoke_tool=invoke, strict_json_schema=False)

    def __repr__(self) -> str:
        return f"RecapSession({self.session_id!r})"
