"""What a request costs under Claude's prompt-cache rules, and what it still carries.

The rules the fake API implements (``recap.testing.request_usage``): a request
reads from cache the longest prefix (tools, system, messages) that an earlier
request wrote up to one of its ``cache_control`` breakpoints, writes from there
to its own last breakpoint, and pays the rest uncached. Each request's three
counts are kept (:class:`Usage`), so one run is priced under any
:class:`PriceRule` by arithmetic, without running the systems again: the rules
swept (:data:`RULES`: cache reads at 0.1x, 0.05x and 0.025x of base input, the
summarizer at its own model's price and at the reply model's, and 1-hour cache
writes) and the primary one (:data:`PRIMARY`: the product's default models).
Every figure is in the reply model's base-input tokens. A system's summarizing
calls are priced at the rule's summarizer rates, input and output
(:class:`Spent`); server-side compaction's at the reply model's, as the API bills
it. The replies' own output is the same for every system and left out.
:func:`floor_tokens` is what no system can go under: every message written to the
cache once, nothing read back.

What a request keeps: its verbatim message tokens, and the share of the
conversation's specifics so far that it carries. Also the requests of the systems
compared (full history, a peer's messages, Recap's with a per-reply block).
Shared by the cost benchmark (recap.bench.cost) and the checkout's verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from recap.bench.harness import env as benv
from recap.bench.harness.extras import need
from recap.core.planning.prices import (
    DEFAULT_REPLY_MODEL,
    DEFAULT_SUMMARIZER_MODEL,
    TTL,
    Prices,
    prices_for,
    with_read,
)

PRICE_WRITE = 1.25
PRICE_READ = 0.1
PAUSE_SHARE = 0.3
SAMPLES = 25  # replies whose specifics are checked (extraction is the slow part)
EPHEMERAL = {"type": "ephemeral"}
READS = (0.1, 0.05, 0.025)  # cache-read ratios swept: the list's range of Claude models

Specifics = Callable[[str], frozenset[str]]


@dataclass(frozen=True)
class PriceRule:
    """One way of pricing tokens, each a ratio to the reply model's base input:
    cache reads and writes, the reply model's output (what server-side compaction's
    summary is billed at), the summarizer's input and output. ``ttl`` "1h": the
    cache outlives a person's pause (assumed under an hour), so it empties only
    where a session or sitting opens. ``label`` names the rule in a table's header;
    ``basis`` says where its ratios come from."""

    label: str
    read: float
    write: float
    output: float
    summarizer_input: float
    summarizer_output: float
    ttl: TTL = "5m"
    basis: str = ""


def rule_of(prices: Prices, label: str) -> PriceRule:
    """The rule that prices as ``prices`` does (its ratios to the reply model's
    input), its basis the models and their rates."""
    return PriceRule(label, prices.read, prices.write, prices.reply.output / prices.reply.input,
                     prices.call_input, prices.call_output, prices.ttl, prices.basis())


def _short(model: str) -> str:
    return model.removeprefix("claude-")


def sweep(reply: str = DEFAULT_REPLY_MODEL,
          summarizer: str = DEFAULT_SUMMARIZER_MODEL) -> tuple[PriceRule, ...]:
    """The rules swept, each from ``reply``'s and ``summarizer``'s rows of the price
    table (recap.core.planning.prices.TABLE): for each cache-read ratio of
    :data:`READS` (and ``reply``'s own, if it is not one of them), the summarizer at
    its own model's price, then at the reply model's; then 1-hour cache writes at
    the two models' list prices. A read ratio other than the list's is a what-if,
    and its basis says so."""
    own, same = prices_for(reply, summarizer), prices_for(reply, reply)
    rules = []
    for ratio in sorted({*READS, own.read}, reverse=True):
        listed = abs(own.read - ratio) < 1e-12
        for prices, who in ((own, summarizer), (same, reply)):
            priced_at = prices if listed else with_read(prices, ratio)
            rule = rule_of(priced_at, f"read {ratio:g}x{' (list)' if listed else ''}, "
                                      f"summarizer {_short(who)}")
            if not listed:
                rule = replace(rule, basis=f"what-if: cache reads at {ratio:g}x input; "
                                           + rule.basis)
            rules.append(rule)
    hour = prices_for(reply, summarizer, ttl="1h")
    rules.append(rule_of(hour, f"1h writes {hour.write:g}x, read {hour.read:g}x, "
                               f"summarizer {_short(summarizer)}"))
    return tuple(rules)


RULES = sweep()
# The product's default models at their list prices: claude-sonnet-5-5 replies
# (cache reads 0.05x, 5-minute writes 1.25x, output 5x) summarized by
# claude-haiku-5-5 (0.05x input, 0.25x output). What a user who changes nothing
# pays; one of RULES by construction.
PRIMARY = next(r for r in RULES if r.ttl == "5m" and r.basis == prices_for(
    DEFAULT_REPLY_MODEL, DEFAULT_SUMMARIZER_MODEL).basis())
# The list's standard multipliers with one model replying and summarizing (write
# 1.25x, read 0.1x, output 5x): what recap.core.spend prices with when no
# settings name the models.
STANDARD = PriceRule(f"write {PRICE_WRITE:g}x, read {PRICE_READ:g}x", PRICE_READ, PRICE_WRITE,
                     5.0, 1.0, 5.0, basis="the list's standard multipliers, one model "
                                          "replying and summarizing")


@dataclass(frozen=True)
class Usage:
    """One request's input tokens: written to the cache, read from it, uncached."""

    written: int
    read: int
    uncached: int

    @property
    def input(self) -> int:
        return self.written + self.read + self.uncached

    def cost(self, rule: PriceRule) -> float:
        return rule.write * self.written + rule.read * self.read + self.uncached


@dataclass(frozen=True)
class Spent:
    """A system's summarizing calls: input and output tokens, and whether the reply
    model's rates bill them (server-side compaction: the API bills its iteration
    so) rather than the summarizer's."""

    input: int = 0
    output: int = 0
    at_reply_rates: bool = False

    def cost(self, rule: PriceRule) -> float:
        if self.at_reply_rates:
            return self.input + rule.output * self.output
        return rule.summarizer_input * self.input + rule.summarizer_output * self.output

    def __add__(self, other: Spent) -> Spent:
        return Spent(self.input + other.input, self.output + other.output,
                     self.at_reply_rates or other.at_reply_rates)


@dataclass
class Priced:
    """A system's requests over a conversation, priced, and what they keep."""

    name: str
    warm: tuple[Usage, ...]  # each request, the cache emptied only where a session opens
    paused: tuple[Usage, ...]  # each request, the cache emptied after a pause too
    spent: Spent  # its summarizing calls
    verbatim: float  # mean verbatim message tokens per reply
    kept: float  # mean share of the specifics so far that the request carries

    @property
    def replies(self) -> int:
        return len(self.warm)

    @property
    def written(self) -> int:
        return sum(u.written for u in self.warm)

    @property
    def read(self) -> int:
        return sum(u.read for u in self.warm)

    @property
    def uncached(self) -> int:
        return sum(u.uncached for u in self.warm)

    @property
    def input(self) -> int:
        return self.written + self.read + self.uncached

    @property
    def summarization(self) -> int:
        return self.spent.input

    def replies_cost(self, rule: PriceRule = PRIMARY, *, pauses: bool = True) -> float:
        """The replies' input under ``rule``, with the pauses or without; a 1-hour
        cache outlives the pauses."""
        usage = self.paused if pauses and rule.ttl == "5m" else self.warm
        return sum(u.cost(rule) for u in usage)

    def cost(self, rule: PriceRule = PRIMARY, *, pauses: bool = True) -> float:
        """Replies plus summarizing under ``rule``, in base-input tokens."""
        return self.replies_cost(rule, pauses=pauses) + self.spent.cost(rule)


def usages(bodies: Sequence[dict[str, Any]], count: Callable[[str], int],
           pauses: Sequence[bool] = (), starts: Sequence[bool] = ()) -> tuple[Usage, ...]:
    """Each request of ``bodies`` in order as the cache bills it. ``pauses``: the
    requests after a pause longer than the cache lives; ``starts``: those that
    open a new session (weeks later): both find an empty cache."""
    from recap.testing import request_usage

    cold = [bool(p) or bool(s) for p, s in zip(
        list(pauses) or [False] * len(bodies), list(starts) or [False] * len(bodies),
        strict=True)]
    cache: set[bytes] = set()
    out = []
    for body, empty in zip(bodies, cold, strict=True):
        if empty:
            cache.clear()  # more than 5 minutes since the last hit: all expired
        u = request_usage(body, cache, count=count)
        out.append(Usage(u["cache_creation_input_tokens"], u["cache_read_input_tokens"],
                         u["input_tokens"]))
    return tuple(out)


def price(bodies: Sequence[dict[str, Any]], count: Callable[[str], int],
          pauses: Sequence[bool], starts: Sequence[bool] = (), *,
          rule: PriceRule = STANDARD) -> tuple[int, int, int, float, float]:
    """(written, read, uncached, cost, cost with ``pauses``) over ``bodies`` in order,
    under ``rule``. ``starts``: the requests that open a new session (weeks later:
    an empty cache)."""
    warm = usages(bodies, count, (), starts)
    paused = usages(bodies, count, pauses, starts)
    return (sum(u.written for u in warm), sum(u.read for u in warm),
            sum(u.uncached for u in warm), sum(u.cost(rule) for u in warm),
            sum(u.cost(rule) for u in paused))


def floor_tokens(system: str, messages: Iterable[str], count: Callable[[str], int]) -> int:
    """The tokens of the floor: the system prompt once and every message once, each
    written to the cache and nothing read back (priced at a rule's write ratio:
    what no system that sends each message to the model can go under)."""
    return count(system) + sum(count(t) for t in messages)


def answer_tokens(message: dict[str, Any], count: Callable[[str], int]) -> int:
    """Output tokens of a Messages API answer as the stand-in returned it: its text,
    each tool call's input as JSON, counted by ``count`` (the counter of every input
    token here)."""
    return sum(count(b["text"]) if b.get("type") == "text" else
               count(json.dumps(b.get("input") or {})) if b.get("type") == "tool_use" else 0
               for b in message.get("content") or [])


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


def priced(name: str, bodies: Sequence[dict[str, Any]], spent: Spent, *,
           script: Sequence[tuple[str, str]], pauses: Sequence[bool],
           count: Callable[[str], int], specifics: Specifics,
           starts: Sequence[bool] = ()) -> Priced:
    warm = usages(bodies, count, (), starts)
    paused = usages(bodies, count, pauses, starts)
    verbatim, kept = keeps(bodies, script, count, specifics)
    return Priced(name, warm, paused, spent, verbatim, kept)


def spent_of(answers: Iterable[tuple[dict[str, Any], dict[str, Any]]],
             count: Callable[[str], int], *,
             which: Callable[[dict[str, Any]], bool] = lambda body: True) -> Spent:
    """Input and output tokens of the answered calls (``FakeAnthropic.answers``)
    whose request ``which`` selects."""
    from recap.evals.standin import request_tokens

    chosen = [(b, m) for b, m in answers if which(b)]
    return Spent(sum(request_tokens(b, count) for b, _ in chosen),
                 sum(answer_tokens(m, count) for _, m in chosen))


def recap_spent(answers: Iterable[tuple[dict[str, Any], dict[str, Any]]],
                count: Callable[[str], int]) -> Spent:
    """Recap's own calls among a run's answered calls: summaries (which mine the
    memories too), the retention guard's repairs and titles."""
    from recap.evals.standin import recap_kind

    return spent_of(answers, count, which=lambda body: recap_kind(body) is not None)


def total(p: Priced, base: float, rule: PriceRule = PRIMARY) -> float:
    """Modeled cost of a conversation (replies with no pause + summarizing) under
    ``rule``, full history without caching = 1.00."""
    return p.cost(rule, pauses=False) / base


def hits(p: Priced) -> float:
    return p.read / max(1, p.input)
