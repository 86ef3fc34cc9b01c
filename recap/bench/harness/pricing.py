"""What a request costs under Claude's prompt-cache rules, and what it still carries.

The rules the fake API implements (``recap.testing.request_usage``): a request
reads from cache the longest prefix (tools, system, messages) that an earlier
request wrote up to one of its ``cache_control`` breakpoints, writes from there
to its own last breakpoint, and pays the rest uncached. Prices relative to base
input: write 1.25x, read 0.1x (the published multipliers); output is left out
(the same for every system). What a request keeps: its verbatim message tokens,
and the share of the conversation's specifics so far that it carries. Also the
requests of the systems compared (full history, a peer's messages, Recap's with
a per-reply block). Shared by the cost benchmark (recap.bench.cost) and the
checkout's verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from recap.bench.harness import env as benv
from recap.bench.harness.extras import need

PRICE_WRITE = 1.25
PRICE_READ = 0.1
PAUSE_SHARE = 0.3
SAMPLES = 25  # replies whose specifics are checked (extraction is the slow part)
EPHEMERAL = {"type": "ephemeral"}

Specifics = Callable[[str], frozenset[str]]


@dataclass
class Priced:
    name: str
    replies: int
    written: int
    read: int
    uncached: int
    summarization: int  # input tokens of summarization calls (Recap: summary, repair, title)
    cost: float  # replies only, in base-input tokens
    cost_paused: float
    verbatim: float  # mean verbatim message tokens per reply
    kept: float  # mean share of the specifics so far that the request carries

    @property
    def input(self) -> int:
        return self.written + self.read + self.uncached


def price(bodies: Sequence[dict[str, Any]], count: Callable[[str], int],
          pauses: Sequence[bool], starts: Sequence[bool] = ()) -> tuple[int, int, int, float,
                                                                       float]:
    """(written, read, uncached, cost, cost with ``pauses``) over ``bodies`` in order.
    ``starts``: the requests that open a new session (weeks later: an empty cache)."""
    from recap.testing import request_usage

    totals = [0, 0, 0]
    costs = [0.0, 0.0]
    opens = list(starts) or [False] * len(bodies)
    for variant, paused in enumerate(([False] * len(bodies), pauses)):
        cache: set[bytes] = set()
        for body, pause, start in zip(bodies, paused, opens, strict=True):
            if pause or start:
                cache.clear()  # more than 5 minutes since the last hit: all expired
            u = request_usage(body, cache, count=count)
            w, r, x = (u["cache_creation_input_tokens"], u["cache_read_input_tokens"],
                       u["input_tokens"])
            costs[variant] += PRICE_WRITE * w + PRICE_READ * r + x
            if variant == 0:
                totals = [totals[0] + w, totals[1] + r, totals[2] + x]
    return totals[0], totals[1], totals[2], costs[0], costs[1]


def without_breakpoints(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with every ``cache_control`` removed (the same text, nothing cached)."""
    def strip(blocks: Any) -> Any:
        if isinstance(blocks, str):
            return blocks
        return [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]

    out = dict(body, messages=[dict(m, content=strip(m["content"])) for m in body["messages"]])
    if "system" in body:
        out["system"] = strip(body["system"])
    return out


def shaped(system: Sequence[str], turns: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """A request with Recap's breakpoint placement: each system part, the last turn."""
    messages: list[dict[str, Any]] = [{"role": r, "content": t} for r, t in turns]
    if messages:
        messages[-1] = {"role": messages[-1]["role"], "content": [
            {"type": "text", "text": turns[-1][1], "cache_control": EPHEMERAL}]}
    body: dict[str, Any] = {"messages": messages}
    parts = [p for p in system if p.strip()]
    if parts:
        body["system"] = [{"type": "text", "text": p, "cache_control": EPHEMERAL} for p in parts]
    return body


def peer_body(messages: Sequence[Any]) -> dict[str, Any]:
    """A peer's model input (LangChain messages) as a request: system messages (the
    summary) in ``system``, the rest as turns."""
    messages_module = need("langchain_core.messages")
    AIMessage, SystemMessage = messages_module.AIMessage, messages_module.SystemMessage

    system = [str(m.content) for m in messages if isinstance(m, SystemMessage)]
    turns = [("assistant" if isinstance(m, AIMessage) else "user", str(m.content))
             for m in messages if not isinstance(m, SystemMessage)]
    return shaped([benv.SYSTEM_PROMPT, *system], turns)


def full_history(script: Sequence[tuple[str, str]], budget: int,
                 count: Callable[[str], int]) -> list[dict[str, Any]]:
    """After each user message: every message so far, the oldest dropped over ``budget``."""
    bodies = []
    for i, (role, _) in enumerate(script):
        if role != "user":
            continue
        turns = list(script[:i + 1])
        total = count(benv.SYSTEM_PROMPT) + sum(count(t) for _, t in turns)
        while total > budget and len(turns) > 1:
            total -= count(turns.pop(0)[1])
        bodies.append(shaped([benv.SYSTEM_PROMPT], turns))
    return bodies


def with_dynamic_block(bodies: Sequence[dict[str, Any]], *,
                       before_history: bool) -> list[dict[str, Any]]:
    """Recap's requests plus a block that changes on every reply (memories ranked by
    the newest user turn, say): in ``system`` before the summary part, or as the
    last turn's final block, after its breakpoint. Where such a block may go."""
    out = []
    for i, body in enumerate(bodies):
        block = {"type": "text", "text": f"<MEMORIES>\n(reply {i}) " + DYNAMIC_TEXT}
        body = dict(body, messages=list(body["messages"]))
        if before_history:
            system = list(body.get("system") or [])
            body["system"] = [*system[:1], block, *system[1:]]
        else:
            last = body["messages"][-1]
            body["messages"][-1] = dict(last, content=[*last["content"], block])
        out.append(body)
    return out


# About 150 tokens of memories-like text for with_dynamic_block.
DYNAMIC_TEXT = " ".join(["The user runs the Larkspur analytics cluster; prefers terse answers;"
                         " on-call rotation weekly; region eu-west-1;"] * 6)


def flat(content: str | list[dict[str, Any]]) -> str:
    """A message as plain text (what a text-only peer is given): tool calls and their
    results rendered inline."""
    if isinstance(content, str):
        return content
    parts = []
    for b in content:
        if b.get("type") == "text":
            parts.append(b["text"])
        elif b.get("type") == "tool_use":
            parts.append(f"[tool call {b['name']} {json.dumps(b['input'], sort_keys=True)}]")
        elif b.get("type") == "tool_result":
            inner = b.get("content")
            parts.append(inner if isinstance(inner, str) else
                         "\n".join(x.get("text", "") for x in inner or []))
    return "\n".join(parts)


def texts(body: dict[str, Any]) -> list[str]:
    """Every block of a request as text: its system parts and its turns (a tool
    call or result as :func:`flat` renders it)."""

    def of(content: Any) -> list[str]:
        return [content] if isinstance(content, str) else [flat([b]) for b in content]

    return of(body.get("system") or []) + [t for m in body["messages"] for t in of(m["content"])]


def keeps(bodies: Sequence[dict[str, Any]], script: Sequence[tuple[str, str]],
          count: Callable[[str], int], specifics: Specifics) -> tuple[float, float]:
    """(mean verbatim message tokens per reply, mean share of the specifics so far
    carried by the request, on :data:`SAMPLES` evenly spaced replies)."""
    originals = {text for _, text in script}
    verbatim = [sum(count(t) for t in texts(b) if t in originals) for b in bodies]
    user_at = [i for i, (role, _) in enumerate(script) if role == "user"]
    step = max(1, len(bodies) // SAMPLES)
    shares = []
    for k in range(step - 1, len(bodies), step):
        planted = frozenset().union(*(specifics(t) for _, t in script[:user_at[k] + 1]))
        if planted:  # per block: each text is extracted once for the whole run
            seen = frozenset().union(*(specifics(t) for t in texts(bodies[k])))
            shares.append(len(planted & seen) / len(planted))
    return (sum(verbatim) / max(1, len(verbatim)), sum(shares) / max(1, len(shares)))


def priced(name: str, bodies: Sequence[dict[str, Any]], summarization: int, *,
           script: Sequence[tuple[str, str]], pauses: Sequence[bool],
           count: Callable[[str], int], specifics: Specifics,
           starts: Sequence[bool] = ()) -> Priced:
    w, r, x, cost, paused = price(bodies, count, pauses, starts)
    verbatim, kept = keeps(bodies, script, count, specifics)
    return Priced(name, len(bodies), w, r, x, summarization, cost, paused, verbatim, kept)


def recap_spent(requests: Sequence[dict[str, Any]], count: Callable[[str], int]) -> int:
    """Input tokens of all of Recap's own calls among a run's requests: summaries
    (which mine the memories too), the retention guard's repairs and titles."""
    from recap.evals.standin import recap_kind, request_tokens

    return sum(request_tokens(b, count) for b in requests if recap_kind(b) is not None)


def total(p: Priced, base: float) -> float:
    """Modeled cost of a conversation (replies + summarization), full history = 1.00."""
    return (p.cost + p.summarization) / base


def hits(p: Priced) -> float:
    return p.read / max(1, p.input)
