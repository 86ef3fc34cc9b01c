"""Benchmark 9: what a user pays for a conversation, modeled.

Users pay mostly for the replies: each sends the assembled context. For every
reply of the shared demo conversation (after each user message) this takes the
request each system sends and prices it by Claude's prompt-cache rules, the
ones the fake API implements (``recap.testing.request_usage``): a request
reads from cache the longest prefix (tools, system, messages) that an earlier
request wrote up to one of its ``cache_control`` breakpoints, writes from there
to its own last breakpoint, and pays the rest uncached. Prices relative to base
input: write 1.25x, read 0.1x (the published multipliers); output is left out
(the same for every system). Summarization calls (for Recap every call of its
own: summaries, the retention guard's repairs, titles) are added at base price.
Tokens are tiktoken's (Recap's counter) over each block of a request.

Systems:
- Recap, caching: ``as_request(build_context(...))`` as shipped (breakpoints on
  the app's prompt, the summary part and the last turn);
- Recap, no caching: the same requests without breakpoints;
- LangMem ``summarize_messages`` and LangChain's ``SummarizationMiddleware``
  (recap/evals/peers.py), given the same placement (their summary in ``system`` with a
  breakpoint, one on the last turn), so the comparison is fair;
- full history: every message so far, the oldest dropped once over the budget,
  with and without caching; "full history, no caching" is the 1.00 of cost.

What each keeps: verbatim context tokens per reply (message text sent as
written), and the share of the conversation's specifics (numbers, ids, paths...,
``extract_specifics``) so far that the request still carries, on sampled replies.

Variant: a 30% chance (seeded) that a reply comes after a pause longer than the
cache's 5 minutes, which empties it. Figures come from the stand-in's summaries,
not a model's: they measure the mechanism (what is resent, what is cached).
Recap's settings are swept (:data:`SWEEP`: budget, keep window, the memories
block and where it goes, the cache-aware ``RECAP_CONDENSE_TO``, bulk excerpts for
the summarizer) on both conversations (the demo's, and short messages
with many turns), and the cost-vs-kept points are plotted with the peers
(``cost.png`` under ``--plots DIR``, a panel per conversation).
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from recap.bench.harness import env as benv
from recap.bench.harness.extras import need, peers, pyplot
from recap.bench.harness.stats import report, table

PRICE_WRITE = 1.25
PRICE_READ = 0.1
PAUSE_SHARE = 0.3
SAMPLES = 25  # replies whose specifics are checked (extraction is the slow part)
EPHEMERAL = {"type": "ephemeral"}

PLOT = "cost.png"
DEFAULT_ROW = "Recap, caching (default)"
EXCERPTS = "bulk excerpts"  # in the name of a swept setting with RECAP_SUMMARIZE_BULK_TOKENS
PEER_PREFIXES = ("LangMem", "LangChain")
MIN_CACHE_HITS = 0.85  # a dominating setting reads >= 85% of reply input from cache
_DEEP: dict[str, object] = {"RECAP_CONTEXT_BUDGET_TOKENS": 16000, "RECAP_CONDENSE_TO": 0.1,
                            "RECAP_KEEP_RECENT": 3, "RECAP_SUMMARIZE_BULK_TOKENS": 150}
# Recap settings swept for the cost-vs-kept frontier (RECAP_* variables of a run),
# under the fixed rule (RECAP_POLICY=threshold): the adaptive policy sizes these
# levers per session itself.
SWEEP: tuple[tuple[str, dict[str, object]], ...] = (
    # The measured alternative to the default placement of the <MEMORIES> block:
    # ranked by the newest user turn, sent uncached after the last breakpoint.
    ("memories per reply", {"RECAP_MEMORIES_PER": "reply"}),
    # The cache-aware policy: each fold condenses down to a low-water mark.
    ("condense to 30%", {"RECAP_CONDENSE_TO": 0.3}),
    ("budget 16k, condense to 30%, memories 2000",
     {"RECAP_CONTEXT_BUDGET_TOKENS": 16000, "RECAP_CONDENSE_TO": 0.3,
      "RECAP_MEMORY_BUDGET_TOKENS": 2000}),
    # The summarizer reads excerpts of pasted blocks (RECAP_SUMMARIZE_BULK_TOKENS).
    ("bulk excerpts 150", {"RECAP_SUMMARIZE_BULK_TOKENS": 150}),
    # Deep, rare folds that leave a small window (keep 3), and a bigger cached
    # memories block to carry the specifics the window no longer holds.
    ("budget 16k, condense to 10%, keep 3, memories 700, bulk excerpts 150",
     {**_DEEP, "RECAP_MEMORY_BUDGET_TOKENS": 700}),
    ("budget 16k, condense to 10%, keep 3, memories 2000, bulk excerpts 150",
     {**_DEEP, "RECAP_MEMORY_BUDGET_TOKENS": 2000}),
)

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


def systems(count: Callable[[str], int], specifics: Specifics, *, conversation: str,
            n: int) -> list[Priced]:
    """Every system priced over the first ``n`` messages of ``conversation``
    ("demo" or "short", see recap.bench.harness.convo.conversation_run)."""
    from recap.bench.harness.convo import conversation_run
    from recap.bench.harness.seed import demo_script, short_script
    from recap.evals.peers import BUDGET, PEERS
    from recap.evals.standin import request_tokens

    env = benv.setup()
    recap = conversation_run(n, conversation)
    script = demo_script(n) if conversation == "demo" else short_script(n)
    replies = sum(1 for role, _ in script if role == "user")
    rng = random.Random(14)
    pauses = [rng.random() < PAUSE_SHARE for _ in range(replies)]
    one = functools.partial(priced, script=script, pauses=pauses, count=count,
                            specifics=specifics)
    spent = recap_spent(recap.requests, count)
    full = full_history(script, BUDGET, count)
    out = [one("full history, no caching", [without_breakpoints(b) for b in full], 0),
           one("full history, caching", full, 0),
           one("Recap, no caching", [without_breakpoints(b) for b in recap.bodies], spent),
           one(DEFAULT_ROW, recap.bodies, spent),
           one("Recap, caching, per-reply block in system (avoid)",
               with_dynamic_block(recap.bodies, before_history=True), spent),
           one("Recap, caching, per-reply block after the last breakpoint",
               with_dynamic_block(recap.bodies, before_history=False), spent)]
    latency, env.fake.delay = env.fake.delay, 0.0
    try:
        for peer in PEERS:
            env.fake.reset()
            result = peer(script, env.fake.url)
            if result.error:
                print(f"{result.name} failed: {result.error}")
            calls = sum(request_tokens(b, count) for b in env.fake.requests)
            out.append(one(result.name, [peer_body(m) for m in result.sent], calls))
    finally:
        env.fake.delay = latency
    for name, settings in SWEEP:  # the fixed rule's levers
        swept = conversation_run(n, conversation, RECAP_POLICY="threshold", **settings)
        out.append(one(f"Recap, caching, {name}", swept.bodies,
                       recap_spent(swept.requests, count)))
    return out




def total(p: Priced, base: float) -> float:
    """Modeled cost of a conversation (replies + summarization), full history = 1.00."""
    return (p.cost + p.summarization) / base


def hits(p: Priced) -> float:
    return p.read / max(1, p.input)


def dominating(rows: Sequence[Priced], peer: Priced) -> list[Priced]:
    """Recap rows (caching on) that cost less than ``peer`` *and* keep at least as many
    specifics, with a cache-hit share >= :data:`MIN_CACHE_HITS`; cheapest first.
    ``rows[0]`` is the 1.00 of cost."""
    base = rows[0].cost
    return sorted((p for p in rows if p.name.startswith("Recap, caching")
                   and total(p, base) < total(peer, base) and p.kept >= peer.kept
                   and hits(p) >= MIN_CACHE_HITS), key=lambda p: total(p, base))


def beaten_by(rows: Sequence[Priced], row: Priced) -> list[Priced]:
    """The rows that cost no more than ``row`` and keep at least as much (one of the
    two strictly)."""
    base = rows[0].cost
    mine = (total(row, base), row.kept)
    return [p for p in rows if (total(p, base), p.kept) != mine
            and total(p, base) <= mine[0] and p.kept >= mine[1]]


def on_frontier(rows: Sequence[Priced], row: Priced) -> bool:
    """Whether no other row costs less while keeping at least as much (or keeps more
    for no more)."""
    return not beaten_by(rows, row)


def frontier(rows: Sequence[Priced], conversation: str) -> str:
    """The verdict: for each peer, the cheapest Recap setting dominating it (or none),
    and whether the default sits on the frontier."""
    base = rows[0].cost
    lines = []
    for peer in (p for p in rows if p.name.startswith(PEER_PREFIXES)):
        wins = dominating(rows, peer)
        best = wins[0] if wins else None
        lines.append([conversation, peer.name, f"{total(peer, base):.3f}, {peer.kept:.1%}",
                      (f"{best.name}: {total(best, base):.3f}, {best.kept:.1%}, "
                       f"{hits(best):.0%} cache hits" if best else "none"),
                      str(len(wins)), "yes" if best else "**no**"])
    default = next((p for p in rows if p.name == DEFAULT_ROW), None)
    # Bulk excerpts cut what the summarizer reads of pasted blocks, which the kept
    # axis (the guard's extractor) cannot see by construction: the default, which
    # reads every line, is placed among the settings that read every line too.
    reading_all = [p for p in rows if EXCERPTS not in p.name]
    beaten = beaten_by(reading_all, default) if default else []
    verdict = ("the default is on the frontier" if default and not beaten else
               "the default is NOT on the frontier" + "".join(
                   f"; {p.name}: {total(p, base):.3f}, {p.kept:.1%}" for p in beaten))
    return report(f"cost: the frontier against each peer ({conversation}; {verdict})",
                  table(["conversation", "peer", "its cost, kept",
                         "cheapest Recap setting that costs less and keeps as much",
                         "such settings", "dominated?"], lines))


def plot(panels: Sequence[tuple[str, Sequence[Priced]]]) -> str:
    """Cost vs kept, one panel per conversation (its first row is the 1.00 of cost),
    with --plots; the line that names it."""
    path = benv.plot_path(PLOT)
    if path is None:
        return ""
    plt = pyplot()

    fig, axes = plt.subplots(1, len(panels), figsize=(8 * len(panels), 5))
    for ax, (title, rows) in zip(axes, panels, strict=True):
        base = rows[0].cost
        for p in rows:
            recap = p.name.startswith("Recap")
            x, y = (p.cost + p.summarization) / base, 100 * p.kept
            ax.scatter(x, y, marker="o" if recap else "s", color="C0" if recap else "C3")
            ax.annotate(p.name.replace("Recap, caching, ", "").replace("summarize_messages", "")
                        .replace(" (+ user-first fix)", ""), (x, y),
                        fontsize=7, xytext=(4, 3), textcoords="offset points")
        ax.set_xlabel("modeled input cost per conversation (full history, no caching = 1.00)")
        ax.set_ylabel("specifics of the conversation still sent (%)")
        ax.set_title(f"{title}: Recap settings in blue, others in red")
        ax.grid(alpha=0.3)
    return benv.save_plot(fig, path).replace("Plot:", "Plot (both conversations):")


def run(quick: bool = False, specifics: Specifics | None = None) -> str:
    """The cost table. ``specifics``: the retention guard's extractor (default
    ``recap.core.specifics.extract_specifics``)."""
    from recap.bench.tokens import messages_for
    from recap.llm.tokens import count_tokens

    peers()
    if specifics is None:
        from recap.core.specifics import extract_specifics

        specifics = extract_specifics
    specifics = functools.lru_cache(maxsize=None)(specifics)
    count = functools.lru_cache(maxsize=None)(count_tokens)  # every block, many times
    out, panels = [], []
    for conversation, n in (("demo", messages_for(quick)), ("short", 1400 if quick else 2000)):
        rows = systems(count, specifics, conversation=conversation, n=n)
        out.append(_table(rows, conversation, n))
        out.append(frontier(rows, conversation))
        panels.append((f"{conversation} conversation, {n} messages", rows))
    return "".join(out) + plot(panels) + "\n"


def _table(rows: Sequence[Priced], conversation: str, n: int) -> str:
    base = rows[0].cost
    shape = ("the demo conversation (pasted logs, configs)" if conversation == "demo"
             else "short messages, many turns (recap.bench.harness.seed.short_script)")
    return report(
        f"cost: modeled input cost over {n} messages of {shape} (a reply after each user "
        "message; write 1.25x, read 0.1x; full history, no caching = 1.00; stand-in "
        "summaries)",
        table(["system", "replies", "input tokens / reply", "cache-hit share",
               "cost (replies)", "cost, 30% pauses > 5 min", "summarization tokens",
               "total cost", "verbatim tokens / reply", "specifics kept"],
              [[p.name, p.replies, f"{p.input / max(1, p.replies):,.0f}",
                f"{p.read / max(1, p.input):.0%}", f"{p.cost / base:.2f}",
                f"{p.cost_paused / base:.2f}", f"{p.summarization:,}",
                f"{(p.cost + p.summarization) / base:.2f}", f"{p.verbatim:,.0f}",
                f"{p.kept:.0%}"] for p in rows]))

