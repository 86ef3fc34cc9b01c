"""Benchmark 9: what a user pays for a conversation, modeled.

Users pay mostly for the replies: each sends the assembled context. For every
reply of the shared demo conversation (after each user message) this takes the
request each system sends and prices it by Claude's prompt-cache rules
(recap.bench.harness.pricing) at the primary rule, the product's default models at
their list prices (claude-sonnet-5-5 replies: reads 0.05x, writes 1.25x of base
input; claude-haiku-5-5 summarizing: input 0.05x, output 0.25x). Summarizing
calls (for Recap every call of its own: summaries, the retention guard's repairs,
titles; a peer's summaries) are added, input and the output the stand-in returned,
at the summarizer's rates. The replies' own output is the same for every system
and left out. Tokens are tiktoken's (Recap's counter) over each block of a request.

Each conversation's second table re-prices the same requests under every rule of
recap.bench.harness.pricing.RULES (reads at 0.1x, 0.05x and 0.025x, the summarizer
at its own model's price and at the reply model's, 1-hour writes at 2x) with no
pauses, beside the floor: every message written to the cache once, nothing read.

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
import random
from collections.abc import Callable, Sequence

from recap.bench.harness import env as benv
from recap.bench.harness.extras import peers, pyplot
from recap.bench.harness.pricing import (
    PAUSE_SHARE,
    PRIMARY,
    RULES,
    Priced,
    PriceRule,
    Specifics,
    Spent,
    floor_tokens,
    full_history,
    hits,
    peer_body,
    priced,
    recap_spent,
    spent_of,
    total,
    with_dynamic_block,
    without_breakpoints,
)
from recap.bench.harness.stats import report, section, table

PLOT = "cost.png"
DEFAULT_ROW = "Recap, caching (default)"
FULL_ROW = "full history, caching"
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


def systems(count: Callable[[str], int], specifics: Specifics, *, conversation: str,
            n: int) -> list[Priced]:
    """Every system priced over the first ``n`` messages of ``conversation``
    ("demo" or "short", see recap.bench.harness.convo.conversation_run)."""
    from recap.bench.harness.convo import conversation_run
    from recap.evals.peers import BUDGET, PEERS

    env = benv.setup()
    recap = conversation_run(n, conversation)
    script = script_of(conversation, n)
    replies = sum(1 for role, _ in script if role == "user")
    rng = random.Random(14)
    pauses = [rng.random() < PAUSE_SHARE for _ in range(replies)]
    one = functools.partial(priced, script=script, pauses=pauses, count=count,
                            specifics=specifics)
    spent = recap_spent(recap.answers, count)
    full = full_history(script, BUDGET, count)
    out = [one("full history, no caching", [without_breakpoints(b) for b in full], Spent()),
           one(FULL_ROW, full, Spent()),
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
            calls = spent_of(env.fake.answers, count)  # its summaries, all
            out.append(one(result.name, [peer_body(m) for m in result.sent], calls))
    finally:
        env.fake.delay = latency
    for name, settings in SWEEP:  # the fixed rule's levers
        swept = conversation_run(n, conversation, RECAP_POLICY="threshold", **settings)
        out.append(one(f"Recap, caching, {name}", swept.bodies,
                       recap_spent(swept.answers, count)))
    return out


def base_of(rows: Sequence[Priced], rule: PriceRule = PRIMARY) -> float:
    """The 1.00 of cost: the first row's (full history without caching: every token
    uncached, the same under every rule)."""
    return rows[0].cost(rule, pauses=False)


def dominating(rows: Sequence[Priced], peer: Priced,
               rule: PriceRule = PRIMARY) -> list[Priced]:
    """Recap rows (caching on) that cost less than ``peer`` under ``rule`` *and* keep
    at least as many specifics, with a cache-hit share >= :data:`MIN_CACHE_HITS`;
    cheapest first. ``rows[0]`` is the 1.00 of cost."""
    base = base_of(rows, rule)
    return sorted((p for p in rows if p.name.startswith("Recap, caching")
                   and total(p, base, rule) < total(peer, base, rule) and p.kept >= peer.kept
                   and hits(p) >= MIN_CACHE_HITS), key=lambda p: total(p, base, rule))


def beaten_by(rows: Sequence[Priced], row: Priced, rule: PriceRule = PRIMARY) -> list[Priced]:
    """The rows that cost no more than ``row`` under ``rule`` and keep at least as
    much (one of the two strictly)."""
    base = base_of(rows, rule)
    mine = (total(row, base, rule), row.kept)
    return [p for p in rows if (total(p, base, rule), p.kept) != mine
            and total(p, base, rule) <= mine[0] and p.kept >= mine[1]]


def on_frontier(rows: Sequence[Priced], row: Priced, rule: PriceRule = PRIMARY) -> bool:
    """Whether no other row costs less while keeping at least as much (or keeps more
    for no more)."""
    return not beaten_by(rows, row, rule)


def frontier(rows: Sequence[Priced], conversation: str, rule: PriceRule = PRIMARY) -> str:
    """The verdict under ``rule``: for each peer, the cheapest Recap setting
    dominating it (or none), and whether the default sits on the frontier."""
    base = base_of(rows, rule)
    lines = []
    for peer in (p for p in rows if p.name.startswith(PEER_PREFIXES)):
        wins = dominating(rows, peer, rule)
        best = wins[0] if wins else None
        lines.append([conversation, peer.name,
                      f"{total(peer, base, rule):.3f}, {peer.kept:.1%}",
                      (f"{best.name}: {total(best, base, rule):.3f}, {best.kept:.1%}, "
                       f"{hits(best):.0%} cache hits" if best else "none"),
                      str(len(wins)), "yes" if best else "**no**"])
    default = next((p for p in rows if p.name == DEFAULT_ROW), None)
    # Bulk excerpts cut what the summarizer reads of pasted blocks, which the kept
    # axis (the guard's extractor) cannot see by construction: the default, which
    # reads every line, is placed among the settings that read every line too.
    reading_all = [p for p in rows if EXCERPTS not in p.name]
    beaten = beaten_by(reading_all, default, rule) if default else []
    verdict = ("the default is on the frontier" if default and not beaten else
               "the default is NOT on the frontier" + "".join(
                   f"; {p.name}: {total(p, base, rule):.3f}, {p.kept:.1%}" for p in beaten))
    return report(f"cost: the frontier against each peer ({conversation}; at {rule.label}; "
                  f"{verdict})",
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
        base = base_of(rows)
        for p in rows:
            recap = p.name.startswith("Recap")
            x, y = total(p, base), 100 * p.kept
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
        out.append(section(conversation, _table(rows, conversation, n)))
        out.append(section(f"{conversation}-frontier", frontier(rows, conversation)))
        floor = floor_tokens(benv.SYSTEM_PROMPT, (t for _, t in script_of(conversation, n)),
                             count)
        out.append(section(f"{conversation}-prices", prices_table(rows, conversation, floor)))
        panels.append((f"{conversation} conversation, {n} messages", rows))
    return "".join(out) + plot(panels) + "\n"


def script_of(conversation: str, n: int) -> list[tuple[str, str]]:
    """The first ``n`` messages of ``conversation`` ("demo" or "short")."""
    from recap.bench.harness.seed import demo_script, short_script

    return demo_script(n) if conversation == "demo" else short_script(n)


def prices_table(rows: Sequence[Priced], conversation: str, floor: int) -> str:
    """Total cost with no pauses under each rule of RULES (full history without
    caching = 1.00): full history with caching, the defaults, the peers, the floor
    (``floor`` tokens, each written once at the rule's write ratio), and the
    defaults over full history with caching."""
    base = base_of(rows)
    full = next(p for p in rows if p.name == FULL_ROW)
    mine = next(p for p in rows if p.name == DEFAULT_ROW)
    shown = [full, mine, *(p for p in rows if p.name.startswith(PEER_PREFIXES))]
    lines: list[list[object]] = [[p.name, *(f"{total(p, base, rule):.3f}" for rule in RULES)]
                                 for p in shown]
    lines.append(["floor: every message written once, nothing read",
                  *(f"{rule.write * floor / base:.3f}" for rule in RULES)])
    lines.append([f"{DEFAULT_ROW} / {FULL_ROW}",
                  *(f"{total(mine, base, rule) / max(total(full, base, rule), 1e-9):.2f}x"
                    for rule in RULES)])
    bases = "\n".join(f"- {rule.label}: {rule.basis}" for rule in RULES)
    return report(
        f"cost under each price rule ({conversation}; total cost with no pauses, full "
        f"history, no caching = 1.00; the primary rule, of the table above, is "
        f"{PRIMARY.label}; stand-in summaries)",
        table(["system", *(r.label for r in RULES)], lines)
        + "\n\nEach rule's prices (ratios to the reply model's input):\n\n" + bases)


def _table(rows: Sequence[Priced], conversation: str, n: int) -> str:
    base = base_of(rows)
    shape = ("the demo conversation (pasted logs, configs)" if conversation == "demo"
             else "short messages, many turns (recap.bench.harness.seed.short_script)")
    return report(
        f"cost: modeled input cost over {n} messages of {shape} (a reply after each user "
        f"message; priced at {PRIMARY.label}: the default models' list prices, write "
        f"{PRIMARY.write:g}x, summarizing output counted; full history, no caching = 1.00; "
        "stand-in summaries)",
        table(["system", "replies", "input tokens / reply", "cache-hit share",
               "cost (replies)", "cost, 30% pauses > 5 min", "summarizing tokens in / out",
               "total cost", "verbatim tokens / reply", "specifics kept"],
              [[p.name, p.replies, f"{p.input / max(1, p.replies):,.0f}",
                f"{p.read / max(1, p.input):.0%}",
                f"{p.replies_cost(PRIMARY, pauses=False) / base:.2f}",
                f"{p.replies_cost(PRIMARY) / base:.2f}",
                f"{p.spent.input:,} / {p.spent.output:,}", f"{total(p, base):.2f}",
                f"{p.verbatim:,.0f}", f"{p.kept:.0%}"] for p in rows]))
