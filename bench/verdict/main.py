"""The defaults' verdict: does Recap, with no setting changed, dominate each peer?

On each workload (bench.verdict.workloads: demo, short turns, agent transcript,
multi-session chat, bench.verdict.referring's multi-sitting chat, coding-agent
session and held-out support thread, bench.verdict.analyst's held-out analyst
agent and bench.verdict.travel's held-out travel desk) every system's requests are
priced by Claude's prompt-cache rules plus its summarizing calls, input and output
(recap.bench.harness.pricing; full history without caching = 1.00), and judged on
what it keeps: the share of the
conversation's specifics its requests still carry (the retention guard's
extractor), **answerable at reference** (bench.verdict.judge: at each later user turn
that refers back to an earlier specific, whether that reply's request carries it;
bench.verdict.asked adds such turns to the four workloads generated without them)
and the planted-fact questions
answered from the context it sends (the stand-in's reader, as ``recap eval --qa``).

**Prices.** The main table and the verdict lines price at one rule,
recap.bench.harness.pricing.PRIMARY: the product's default models at their list
prices, claude-sonnet-5-5 replies (cache reads 0.05x of input, 5-minute writes
1.25x) summarized by claude-haiku-5-5 (input 0.05x, output 0.25x of the reply
model's input): what a user who changes no setting pays. Each workload's second
table re-prices the same requests under every rule of
recap.bench.harness.pricing.RULES (reads at 0.1x, 0.05x and 0.025x, the summarizer
at its own model's price and at the reply model's, and 1-hour writes at 2x, whose
cache outlives a person's pause), with the floor beside them: every message
written to the cache once, nothing read. The systems run once, the defaults'
policy deciding under the primary prices; each rule is arithmetic on the same
per-request token counts. Summarizing output is what the stand-in returned;
server-side compaction's iteration is billed at the reply model's rates under
every rule; the replies' own output is the same for every system and left out.
The summary says, per rule, on how many workloads the defaults dominate all four
peers and what Recap costs against full history with caching.

The cache empties where time does it: at a new session or sitting, and after a
person's pause longer than the cache lives. A chat's person pauses are a seeded
30% of its replies; an agent's session pauses only before a new task the person
types (``Workload.paused``), its calls within a task seconds apart. The total cost
is priced by that rule; the table also shows the cost with no pause and with the
seeded 30% on every workload, where they differ.

The peers: LangChain's SummarizationMiddleware, LangMem, full history with prompt
caching, and full history with caching plus the Messages API's tool-result
clearing (bench.verdict.clearing, two rows: its documented defaults and a trigger
that fires on the quick workloads). Recap's defaults dominate a peer when they
cost no more, keep at least as many specifics, have at least as many references
answerable and answer at least as many questions; tool-result clearing counts as
dominated when both its rows are. Server-side compaction (bench.verdict.compaction:
the ``compact_20260112`` edit at its defaults and at a trigger fitted to the
workload's size, and on-demand compaction) is a fifth peer with three rows, held
apart from the target: a row whose trigger never fires on a workload *does not
act* there and is left out; the last line also says on how many workloads the
defaults dominate all five. Targets per workload: cost at most 0.5x full
history with caching on a tool-heavy session and at most 0.7x on a chat;
answerable at reference at least full history with caching's; 100% answerable
at reference on a chat that fits its budget; and the defaults dominating all
four peers on two thirds of the workloads, six of the nine (the closing lines).

Every comparison runs with the stand-in in **neutral mode** (recap.testing.neutral):
one summarizing rule for every caller (the first sentence of each message,
capped), blind to prompts and tool schemas, so no system's retention rides on a
stand-in that knows what it asks for. ``schema_aware=True`` (``python -m bench
--quick --schema-aware``) runs them against the stand-in's default answers, which
know Recap's prompt and schema: a mechanism test, not a comparison.

At full size a row with ``RECAP_POLICY=threshold`` (the fixed rule) stands next to
the defaults; the quick verdict runs the defaults only
(``RECAP_POLICY=threshold python -m bench --quick`` puts the fixed rule, or any
other policy, in the defaults' place, to try it). Figures come from the
stand-in: they measure the mechanism (what is resent, what is cached, what is
kept), not a model.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench.verdict.clearing import ClearToolUses
from bench.verdict.compaction import FITTED_MAX, MIN_TRIGGER, Compact, OnDemand, fitted_trigger
from bench.verdict.drive import (
    SystemRun,
    counter,
    run_clearing,
    run_compaction,
    run_full,
    run_peer,
    run_recap,
)
from bench.verdict.judge import answerable
from bench.verdict.shapes import Workload, scripts
from bench.verdict.workloads import NAMES, build
from recap.bench.harness import env as benv
from recap.bench.harness.pricing import (
    PAUSE_SHARE,
    PRIMARY,
    RULES,
    Priced,
    PriceRule,
    Usage,
    floor_tokens,
    priced,
    usages,
)
from recap.bench.harness.stats import report, section, table

DEFAULTS = "Recap defaults"
THRESHOLD = "Recap, RECAP_POLICY=threshold"
FULL = "full history, caching"
# Tool-result clearing at its documented defaults, and at a trigger that fires on
# the quick workloads: the peers' 32,000-token budget drops the oldest messages,
# so 30,000 clears tool results as the history nears the budget, before the
# oldest turns fall off (the default 100,000 waits for a history three times that).
CLEARING = (ClearToolUses(), ClearToolUses(trigger=30_000))
CLEAR = "tool-result clearing"
COMPACTION = "server-side compaction"
IDLE = "does not act"
TOOL_COST = 0.5  # target: at most this share of full history with caching, tool-heavy
CHAT_COST = 0.7  # the same on a chat
DOMINATE_TARGET = 6  # two thirds of the nine workloads: the defaults dominate all four peers
PEER_NAMES = {"LangChain": "LangChain SummarizationMiddleware",
              "LangMem": "LangMem summarize_messages"}


@dataclass
class Row:
    name: str
    priced: Priced
    qa: tuple[int, int]
    folds: int
    error: str | None = None
    ref: tuple[int, int] = (0, 0)  # (references answerable, references): bench.verdict.judge
    uniform: tuple[Usage, ...] = ()  # each request with a seeded 30% after a pause
    key: str = ""  # the same system on every workload when its name varies (summary table)
    acts: bool = True  # False: a compaction peer whose trigger never fired on the workload

    @property
    def ident(self) -> str:
        return self.key or self.name

    def total(self, base: float, rule: PriceRule = PRIMARY) -> float:
        """Replies priced by the workload's pause rule plus summarizing, under
        ``rule``, full history without caching = 1.00."""
        return self.priced.cost(rule) / base

    def warm(self, base: float, rule: PriceRule = PRIMARY) -> float:
        """The same with no pause at all (the cache empties only at a new session
        or sitting)."""
        return self.priced.cost(rule, pauses=False) / base

    def uniformly(self, base: float, rule: PriceRule = PRIMARY) -> float:
        """The same with a seeded 30% of replies after a pause, chat or agent."""
        usage = self.uniform if rule.ttl == "5m" else self.priced.warm
        return (sum(u.cost(rule) for u in usage) + self.priced.spent.cost(rule)) / base


def clearing_name(edit: ClearToolUses) -> str:
    default = edit == ClearToolUses()
    return f"{CLEAR}, " + (f"defaults ({edit.label()})" if default else edit.label())


def compactions(w: Workload, count: Callable[[str], int]) -> list[tuple[Compact | OnDemand,
                                                                      str, str]]:
    """Server-side compaction's three rows on ``w``, each (config, name, key): the
    edit at its defaults, at the trigger bench.verdict.compaction.fitted_trigger
    picks from the workload's largest session, and on demand past 80% of the peers'
    budget (where LangChain and LangMem summarise)."""
    from recap.evals.peers import BUDGET

    sizes = [count(benv.SYSTEM_PROMPT) + sum(count(t) for _, t in s) for s in scripts(w)]
    fitted = Compact(trigger=fitted_trigger(sizes))
    demand = OnDemand(BUDGET)
    return [(Compact(), f"{COMPACTION}, defaults ({Compact().label()})", ""),
            (fitted, f"{COMPACTION}, {fitted.label()}",
             f"{COMPACTION}, fitted trigger (half the largest session, "
             f"{MIN_TRIGGER // 1000}k-{FITTED_MAX // 1000}k)"),
            (demand, f"{COMPACTION}, {demand.label()}", "")]


def systems(w: Workload, *, threshold: bool, policy: str | None = None) -> list[SystemRun]:
    """Every system over ``w``; the first is the 1.00 of cost. ``threshold``: also
    Recap under the fixed rule (RECAP_POLICY=threshold). ``policy``: a RECAP_POLICY
    to try in the defaults' place (the row says so)."""
    from recap.evals.peers import PEERS

    tried = {"RECAP_POLICY": policy} if policy else {}
    mine = run_recap(w, DEFAULTS + (f" (RECAP_POLICY={policy})" if policy else ""), **tried)
    fixed = [run_recap(w, THRESHOLD, RECAP_POLICY="threshold")] if threshold else []
    clearing = [run_clearing(w, edit, clearing_name(edit)) for edit in CLEARING]
    compacting = [run_compaction(w, config, name, key=key)
                  for config, name, key in compactions(w, counter())]
    return [run_full(w, caching=False), run_full(w), *clearing, *compacting, mine, *fixed,
            *(run_peer(w, peer) for peer in PEERS)]


def rows_of(w: Workload, runs: Sequence[SystemRun], specifics: Callable[[str], frozenset[str]],
            count: Callable[[str], int]) -> list[Row]:
    """Price and judge each run. The first reply of a session or sitting finds an
    empty cache; so does a reply after a person's pause (longer than the cache
    lives): on a chat a seeded 30% of replies, on an agent's session the replies
    its ``Workload.paused`` lists (a new task the person types), its calls within
    a task seconds apart. ``Row.uniform``: the seeded 30% on every workload."""
    script = [m for s in scripts(w) for m in s]
    replies = sum(1 for role, _ in script if role == "user")
    rng = random.Random(14)
    seeded = [rng.random() < PAUSE_SHARE for _ in range(replies)]
    paused = set(w.paused or ())
    person = seeded if w.paused is None else [i in paused for i in range(replies)]
    cold = set(w.cold)
    out = []
    for r in runs:
        starts = [s or i in cold for i, s in enumerate(r.starts)]
        p = priced(r.name, r.bodies, r.spent, script=script, pauses=person[:len(r.bodies)],
                   count=count, specifics=specifics, starts=starts)
        uniform = (p.paused if w.paused is None else
                   usages(r.bodies, count, seeded[:len(r.bodies)], starts))
        out.append(Row(r.name, p, r.qa, r.folds, r.error, answerable(r.bodies, w.probes),
                       uniform, r.key, r.acts))
    return out


def find(rows: Sequence[Row], prefix: str) -> Row:
    return next(r for r in rows if r.name.startswith(prefix))


def base_of(rows: Sequence[Row]) -> float:
    """The 1.00 of cost: the first row's (full history without caching: every token
    uncached, the same under every rule)."""
    return rows[0].priced.cost(PRIMARY)


def dominates(mine: Row, other: Row, base: float, rule: PriceRule = PRIMARY) -> bool:
    """Costs no more under ``rule``, keeps at least as many specifics, has at least
    as many references answerable, answers at least as many questions."""
    return (mine.total(base, rule) <= other.total(base, rule)
            and mine.priced.kept >= other.priced.kept
            and mine.ref[0] >= other.ref[0] and mine.qa[0] >= other.qa[0])


def share(ref: tuple[int, int]) -> str:
    """Answerable at reference as a share ("n/a" without references)."""
    return f"{ref[0] / ref[1]:.0%}" if ref[1] else "n/a"


def brief(row: Row, base: float) -> str:
    """cost · specifics · answerable at reference · QA (the README's cell); "does not
    act" for a compaction peer whose trigger never fired."""
    if not row.acts:
        return IDLE
    return (f"{row.total(base):.3f} · {row.priced.kept:.0%} · {share(row.ref)} · "
            f"{row.qa[0]}/{row.qa[1]}")


def peers_of(rows: Sequence[Row]) -> list[tuple[str, list[Row]]]:
    """The peers the defaults are held against, each with its rows: the four of the
    target, then server-side compaction (tool-result clearing has two rows and is
    dominated when both are; compaction has three, dominated when each row that
    acts is)."""
    return [("LangChain", [find(rows, "LangChain")]), ("LangMem", [find(rows, "LangMem")]),
            ("full history with caching", [find(rows, FULL)]),
            (CLEAR, [r for r in rows if r.name.startswith(CLEAR)]),
            (COMPACTION, [r for r in rows if r.name.startswith(COMPACTION)])]


def verdict(rows: Sequence[Row], w: Workload, *,
            fits: bool) -> tuple[list[str], bool, bool]:
    """The verdict lines of one workload (see the module docstring), whether the
    defaults dominate all four peers on it, and whether they dominate server-side
    compaction's rows that act too. ``fits``: a chat that fits its budget."""
    base = base_of(rows)
    mine = find(rows, DEFAULTS)
    lines, every, fifth = [], True, True
    for label, others in peers_of(rows):
        for other in others:
            named = label + (other.name[len(label):] if label in (CLEAR, COMPACTION) else "")
            if not other.acts:
                lines.append(f"{w.name}: {named}: {IDLE} (no request passes its trigger)")
                continue
            won = dominates(mine, other, base)
            if label == COMPACTION:
                fifth = fifth and won
            else:
                every = every and won
            lines.append(
                f"{w.name}: defaults dominate {named}: {'yes' if won else 'no'} "
                f"(cost {mine.total(base):.3f} vs {other.total(base):.3f}, specifics "
                f"{mine.priced.kept:.0%} vs {other.priced.kept:.0%}, answerable at reference "
                f"{share(mine.ref)} vs {share(other.ref)}, QA {mine.qa[0]}/{mine.qa[1]} "
                f"vs {other.qa[0]}/{other.qa[1]})")
    return lines + targets(mine, find(rows, FULL), base, w, fits=fits), every, every and fifth


def targets(mine: Row, full: Row, base: float, w: Workload, *, fits: bool) -> list[str]:
    """The target lines: cost against full history with caching (tool-heavy or chat),
    answerable at reference at least full history's, 100% on a chat that fits."""
    limit, kind = (TOOL_COST, "tool-heavy") if w.tool_heavy else (CHAT_COST, "chat")
    cost, of = mine.total(base), full.total(base)
    lines = [f"{w.name}: target cost <= {limit}x full history with caching's on a {kind} "
             f"session ({limit * of:.3f}): {'met' if cost <= limit * of else 'not met'} "
             f"({cost:.3f}, {cost / max(of, 1e-9):.2f}x)"]
    if w.probes:
        met = mine.ref[0] >= full.ref[0]
        lines.append(f"{w.name}: target answerable at reference >= full history with "
                     f"caching's ({share(full.ref)}): {'met' if met else 'not met'} "
                     f"({share(mine.ref)})")
    if w.probes and fits and not w.tool_heavy:
        met = mine.ref[0] == mine.ref[1]
        lines.append(f"{w.name}: target answerable at reference 100% on a chat that fits "
                     f"its budget: {'met' if met else 'not met'} ({share(mine.ref)})")
    return lines


def dominates_four(rows: Sequence[Row], rule: PriceRule) -> bool:
    """Whether the defaults dominate LangChain, LangMem, full history with caching
    and tool-result clearing (both rows) under ``rule``."""
    base, mine = base_of(rows), find(rows, DEFAULTS)
    return all(dominates(mine, other, base, rule) for label, others in peers_of(rows)
               if label != COMPACTION for other in others if other.acts)


def against_full(rows: Sequence[Row], rule: PriceRule) -> float:
    """Recap's defaults' total cost over full history with caching's, under ``rule``."""
    base = base_of(rows)
    return find(rows, DEFAULTS).total(base, rule) / max(find(rows, FULL).total(base, rule),
                                                         1e-9)


def sweep_table(w: Workload, rows: Sequence[Row], floor: int) -> str:
    """The workload's total cost under each rule of RULES (full history without
    caching = 1.00): full history with caching, the defaults, each peer's rows, the
    floor (``floor`` tokens, each written once at the rule's write ratio), and the
    defaults over full history with caching."""
    base = base_of(rows)
    shown = [find(rows, FULL), find(rows, DEFAULTS),
             *(r for _, others in peers_of(rows) for r in others if r.name != FULL)]
    lines = [[r.name + ("" if r.acts else f" ({IDLE})"),
              *(f"{r.total(base, rule):.3f}" if r.acts else IDLE for rule in RULES)]
             for r in shown]
    lines.append(["floor: every message written once, nothing read",
                  *(f"{rule.write * floor / base:.3f}" for rule in RULES)])
    lines.append([f"{DEFAULTS} / {FULL}", *(f"{against_full(rows, rule):.2f}x"
                                          for rule in RULES)])
    return report(
        f"verdict, {w.name} workload: cost under each price rule (total cost, full history, "
        f"no caching = 1.00; the primary rule is {PRIMARY.label}; pauses as in the table "
        f"above, none under 1h writes; stand-in: mechanisms, not a model)",
        table(["system", *(r.label for r in RULES)], lines))


def workload_table(w: Workload, rows: Sequence[Row], seconds: float) -> str:
    base = base_of(rows)
    return report(
        f"verdict, {w.name} workload: {w.messages} messages in {len(w.sessions)} session(s), "
        + (f"{len(w.cold)} sittings, " if w.cold else "")
        + (f"{len(w.probes)} references in {len({p.reply for p in w.probes})} later turns, "
           if w.probes else "")
        + f"{len(w.facts)} planted facts (priced at {PRIMARY.label}: the default models' list "
        f"prices, write {PRIMARY.write:g}x, summarizing output counted; full history, no "
        f"caching = 1.00; total cost: pauses as " + ("an agent's: a person's before each new task"
                                             if w.paused is not None else
                                             "a chat's: a seeded 30% of replies")
        + f"; stand-in: mechanisms, not a model; {seconds:.0f}s)",
        table(["system", "replies", "input tokens / reply", "cache-hit share", "folds",
               "summarizing tokens in / out", "total cost", "cost, no pauses", "cost, 30% pauses",
               "specifics kept", "answerable at reference", "QA"],
              [[r.name + (f" (error: {r.error})" if r.error else "")
                + ("" if r.acts else f" ({IDLE})"), r.priced.replies,
                f"{r.priced.input / max(1, r.priced.replies):,.0f}",
                f"{r.priced.read / max(1, r.priced.input):.0%}", r.folds,
                f"{r.priced.spent.input:,} / {r.priced.spent.output:,}"
                + (" (reply rates)" if r.priced.spent.at_reply_rates else ""),
                f"{r.total(base):.3f}", f"{r.warm(base):.3f}",
                f"{r.uniformly(base):.3f}", f"{r.priced.kept:.0%}", share(r.ref),
                f"{r.qa[0]}/{r.qa[1]}"] for r in rows]))


def summary(all_rows: Sequence[tuple[str, Sequence[Row]]]) -> str:
    """One line per system, one column per workload: cost · specifics · answerable
    at reference · QA (the shape of README's table)."""
    names = [r.ident for r in all_rows[0][1][1:]] if all_rows else []
    lines = []
    for name in names:
        cells = []
        for _, rows in all_rows:
            row = next((r for r in rows if r.ident == name), None)
            cells.append(brief(row, base_of(rows)) if row else "-")
        lines.append([name, *cells])
    return table(["system", *(w for w, _ in all_rows)], lines)


def rules_summary(all_rows: Sequence[tuple[str, Sequence[Row]]]) -> str:
    """A line per price rule: on how many workloads the defaults dominate all four
    peers under it, and Recap's cost over full history with caching's on each; then
    each rule's basis."""
    lines = [[rule.label + (" (primary)" if rule == PRIMARY else ""),
              f"{sum(dominates_four(rows, rule) for _, rows in all_rows)} of {len(all_rows)}",
              *(f"{against_full(rows, rule):.2f}x" for _, rows in all_rows)]
             for rule in RULES]
    bases = "\n".join(f"- {rule.label}: {rule.basis}" for rule in RULES)
    return (table(["price rule", "defaults dominate all four peers",
                   *(f"{w}: Recap / full, caching" for w, _ in all_rows)], lines)
            + "\n\nEach rule's prices (ratios to the reply model's input):\n\n" + bases)


def fits_budget(w: Workload, count: Callable[[str], int]) -> bool:
    """Whether each of its sessions, whole, fits the peers' budget."""
    from recap.evals.peers import BUDGET

    return all(count(benv.SYSTEM_PROMPT) + sum(count(t) for _, t in s) <= BUDGET
               for s in scripts(w))


def run(quick: bool = True, *, size: str | None = None, names: Sequence[str] = NAMES,
        threshold: bool | None = None, schema_aware: bool = False) -> str:
    """The tables and the verdict on each workload of ``names`` at ``size``
    (default: quick or full). ``threshold``: run Recap under the fixed rule too
    (default: at full size only). ``schema_aware``: the stand-in's default answers
    (which know Recap's prompt and schema) instead of the neutral mode."""
    import os

    from recap.core.specifics import extract_specifics
    from recap.llm.tokens import count_tokens

    size = size or ("quick" if quick else "full")
    # A RECAP_POLICY of the environment (trying another policy, the fixed rule say)
    # takes the defaults' place; read once, as each run resets the settings it set.
    policy = os.environ.get("RECAP_POLICY")
    specifics = functools.lru_cache(maxsize=None)(extract_specifics)
    count = functools.lru_cache(maxsize=None)(count_tokens)
    out, lines, all_rows, won, won_five = [], [], [], 0, 0
    env = benv.setup()
    latency, neutral = env.latency, env.fake.neutral
    benv.setup(0.0)  # cost does not depend on the stand-in's latency: no waiting
    env.fake.neutral = not schema_aware
    try:
        for name in names:
            t0 = time.monotonic()
            w = build(name, size)
            fixed = (size == "full") if threshold is None else threshold
            runs = systems(w, threshold=fixed, policy=policy)
            rows = rows_of(w, runs, specifics, count)
            floor = floor_tokens(benv.SYSTEM_PROMPT, (t for s in scripts(w) for _, t in s),
                                 count)
            out.append(section(name, workload_table(w, rows, time.monotonic() - t0)
                               + sweep_table(w, rows, floor)))
            said, every, five = verdict(rows, w, fits=fits_budget(w, count))
            lines += said
            won += every
            won_five += five
            all_rows.append((name, rows))
    finally:
        benv.setup(latency)
        env.fake.neutral = neutral
    mode = "schema-aware stand-in" if schema_aware else "neutral stand-in"
    out.append(section("summary", report(
        f"per workload: cost · specifics kept · answerable at reference · QA "
        f"({size} workloads; {mode}; cost at {PRIMARY.label})", summary(all_rows))
        + report(f"per price rule: dominance and Recap's cost against full history with "
                 f"caching ({size} workloads; {mode})", rules_summary(all_rows))))
    lines.append(f"the defaults dominate all four peers on {won} of {len(all_rows)} "
                 f"workloads (target {DOMINATE_TARGET}; at {PRIMARY.label})")
    lines.append(f"with server-side compaction as a fifth peer (its rows that act): all five "
                 f"on {won_five} of {len(all_rows)} workloads")
    out.append(section("verdict", report(
        f"the defaults' verdict ({size} workloads; {mode}; stand-in figures)",
        "```\n" + "\n".join(lines) + "\n```")))
    return "".join(out)

