"""The defaults' verdict: does Recap, with no setting changed, dominate each peer?

On each of the four workloads (bench.workloads: demo, short turns, agent
transcript, multi-session chat) every system's requests are priced by Claude's
prompt-cache rules (bench.cost: write 1.25x, read 0.1x; full history without
caching = 1.00) plus its summarization calls, and judged twice on what it keeps:
the share of the conversation's specifics its requests still carry (the retention
guard's extractor) and the planted-fact questions answered from the context it
sends (the stand-in's reader, as ``recap eval --qa``). Recap's defaults dominate a
peer when they cost no more, keep at least as many specifics and answer at least
as many questions. Targets: at most 0.8x the cheaper peer's cost, at most 0.3x
full history with caching. At full size a row with ``RECAP_POLICY=threshold`` (the
fixed rule) stands next to the defaults; the quick verdict runs the defaults only
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

from bench import env as benv
from bench.cost import PAUSE_SHARE, Priced, priced, total
from bench.drive import SystemRun, run_full, run_peer, run_recap
from bench.stats import report, table
from bench.workloads import NAMES, Workload, build, scripts

DEFAULTS = "Recap defaults"
THRESHOLD = "Recap, RECAP_POLICY=threshold"
FULL = "full history, caching"
PEER_COST = 0.8  # target: at most this share of the cheaper peer's cost
FULL_COST = 0.3  # target: at most this share of full history with caching
PEER_NAMES = {"LangChain": "LangChain SummarizationMiddleware",
              "LangMem": "LangMem summarize_messages"}


@dataclass
class Row:
    name: str
    priced: Priced
    qa: tuple[int, int]
    folds: int
    error: str | None = None

    def total(self, base: float) -> float:
        return total(self.priced, base)


def systems(w: Workload, *, threshold: bool, policy: str | None = None) -> list[SystemRun]:
    """Every system over ``w``; the first is the 1.00 of cost. ``threshold``: also
    Recap under the fixed rule (RECAP_POLICY=threshold). ``policy``: a RECAP_POLICY
    to try in the defaults' place (the row says so)."""
    from recap.evals.peers import PEERS

    tried = {"RECAP_POLICY": policy} if policy else {}
    mine = run_recap(w, DEFAULTS + (f" (RECAP_POLICY={policy})" if policy else ""), **tried)
    fixed = [run_recap(w, THRESHOLD, RECAP_POLICY="threshold")] if threshold else []
    return [run_full(w, caching=False), run_full(w), mine, *fixed,
            *(run_peer(w, peer) for peer in PEERS)]


def rows_of(w: Workload, runs: Sequence[SystemRun], specifics: Callable[[str], frozenset[str]],
            count: Callable[[str], int]) -> list[Row]:
    """Price and judge each run (pauses: a seeded 30% of replies after > 5 minutes)."""
    script = [m for s in scripts(w) for m in s]
    replies = sum(1 for role, _ in script if role == "user")
    rng = random.Random(14)
    pauses = [rng.random() < PAUSE_SHARE for _ in range(replies)]
    out = []
    for r in runs:
        p = priced(r.name, r.bodies, r.spent, script=script, pauses=pauses[:len(r.bodies)],
                   count=count, specifics=specifics, starts=r.starts)
        out.append(Row(r.name, p, r.qa, r.folds, r.error))
    return out


def find(rows: Sequence[Row], prefix: str) -> Row:
    return next(r for r in rows if r.name.startswith(prefix))


def dominates(mine: Row, other: Row, base: float) -> bool:
    """Costs no more, keeps at least as many specifics, answers at least as many."""
    return (mine.total(base) <= other.total(base) and mine.priced.kept >= other.priced.kept
            and mine.qa[0] >= other.qa[0])


def verdict(rows: Sequence[Row], workload: str) -> list[str]:
    """The verdict lines of one workload (see the module docstring)."""
    base = rows[0].priced.cost
    mine = find(rows, DEFAULTS)
    lines = []
    for label, prefix in (("LangChain", "LangChain"), ("LangMem", "LangMem"),
                          ("full history with caching", FULL)):
        other = find(rows, prefix)
        lines.append(
            f"{workload}: defaults dominate {label}: "
            f"{'yes' if dominates(mine, other, base) else 'no'} "
            f"(cost {mine.total(base):.3f} vs {other.total(base):.3f}, specifics "
            f"{mine.priced.kept:.0%} vs {other.priced.kept:.0%}, QA {mine.qa[0]}/{mine.qa[1]} "
            f"vs {other.qa[0]}/{other.qa[1]})")
    cheaper = min(find(rows, p).total(base) for p in ("LangChain", "LangMem"))
    full = find(rows, FULL).total(base)
    for what, limit, of in (("the cheaper peer's", PEER_COST, cheaper),
                            ("full history with caching's", FULL_COST, full)):
        met = mine.total(base) <= limit * of
        lines.append(f"{workload}: target cost <= {limit}x {what} ({limit * of:.3f}): "
                     f"{'met' if met else 'not met'} ({mine.total(base):.3f}, "
                     f"{mine.total(base) / max(of, 1e-9):.2f}x)")
    return lines


def workload_table(w: Workload, rows: Sequence[Row], seconds: float) -> str:
    base = rows[0].priced.cost
    return report(
        f"verdict, {w.name} workload: {w.messages} messages in {len(w.sessions)} session(s), "
        f"{len(w.facts)} planted facts (write 1.25x, read 0.1x; full history, no caching "
        f"= 1.00; stand-in: mechanisms, not a model; {seconds:.0f}s)",
        table(["system", "replies", "input tokens / reply", "cache-hit share", "folds",
               "summarization tokens", "total cost", "cost, 30% pauses", "specifics kept",
               "QA"],
              [[r.name + (f" (error: {r.error})" if r.error else ""), r.priced.replies,
                f"{r.priced.input / max(1, r.priced.replies):,.0f}",
                f"{r.priced.read / max(1, r.priced.input):.0%}", r.folds,
                f"{r.priced.summarization:,}", f"{r.total(base):.3f}",
                f"{(r.priced.cost_paused + r.priced.summarization) / base:.3f}",
                f"{r.priced.kept:.0%}", f"{r.qa[0]}/{r.qa[1]}"] for r in rows]))


def run(quick: bool = True, *, size: str | None = None, names: Sequence[str] = NAMES,
        threshold: bool | None = None) -> str:
    """The tables and the verdict on each workload of ``names`` at ``size``
    (default: quick or full). ``threshold``: run Recap under the fixed rule too
    (default: at full size only)."""
    import os

    from recap.core.specifics import extract_specifics
    from recap.llm.tokens import count_tokens

    size = size or ("quick" if quick else "full")
    # A RECAP_POLICY of the environment (trying another policy, the fixed rule say)
    # takes the defaults' place; read once, as each run resets the settings it set.
    policy = os.environ.get("RECAP_POLICY")
    specifics = functools.lru_cache(maxsize=None)(extract_specifics)
    count = functools.lru_cache(maxsize=None)(count_tokens)
    out, lines = [], []
    latency = benv.setup().latency
    benv.setup(0.0)  # cost does not depend on the stand-in's latency: no waiting
    try:
        for name in names:
            t0 = time.monotonic()
            w = build(name, size)
            fixed = (size == "full") if threshold is None else threshold
            runs = systems(w, threshold=fixed, policy=policy)
            rows = rows_of(w, runs, specifics, count)
            out.append(workload_table(w, rows, time.monotonic() - t0))
            lines += verdict(rows, name)
    finally:
        benv.setup(latency)
    out.append(report(f"the defaults' verdict ({size} workloads; stand-in figures)",
                      "\n".join(lines)))
    return "".join(out)
