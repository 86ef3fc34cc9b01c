"""The defaults' verdict: does Recap, with no setting changed, dominate each peer?

On each workload (bench.verdict.workloads: demo, short turns, agent transcript,
multi-session chat, and bench.verdict.referring's multi-sitting chat, coding-agent
session and the held-out support thread) every system's requests are priced by
Claude's prompt-cache rules (recap.bench.cost: write 1.25x, read 0.1x; full history
without caching = 1.00; a new session or sitting starts with an empty cache) plus
its summarization calls, and judged on what it keeps: the share of the
conversation's specifics its requests still carry (the retention guard's
extractor), **answerable at reference** (bench.verdict.judge: at each later user turn
that refers back to an earlier specific, whether that reply's request carries it;
the workloads without such turns show n/a) and the planted-fact questions
answered from the context it sends (the stand-in's reader, as ``recap eval --qa``).
The peers: LangChain's SummarizationMiddleware, LangMem and full history with
prompt caching. Recap's defaults dominate a peer when they cost no more, keep at
least as many specifics, have at least as many references answerable and answer
at least as many questions. Targets: at most 0.8x the cheaper peer's cost, at
most 0.3x full history with caching.

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

from bench.verdict.drive import SystemRun, run_full, run_peer, run_recap
from bench.verdict.judge import answerable
from bench.verdict.shapes import Workload, scripts
from bench.verdict.workloads import NAMES, build
from recap.bench.harness import env as benv
from recap.bench.harness.pricing import PAUSE_SHARE, Priced, priced, total
from recap.bench.harness.stats import report, table

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
    ref: tuple[int, int] = (0, 0)  # (references answerable, references): bench.verdict.judge

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
    """Price and judge each run (pauses: a seeded 30% of replies after > 5 minutes;
    the first reply of a sitting finds an empty cache)."""
    script = [m for s in scripts(w) for m in s]
    replies = sum(1 for role, _ in script if role == "user")
    rng = random.Random(14)
    pauses = [rng.random() < PAUSE_SHARE for _ in range(replies)]
    cold = set(w.cold)
    out = []
    for r in runs:
        starts = [s or i in cold for i, s in enumerate(r.starts)]
        p = priced(r.name, r.bodies, r.spent, script=script, pauses=pauses[:len(r.bodies)],
                   count=count, specifics=specifics, starts=starts)
        out.append(Row(r.name, p, r.qa, r.folds, r.error, answerable(r.bodies, w.probes)))
    return out


def find(rows: Sequence[Row], prefix: str) -> Row:
    return next(r for r in rows if r.name.startswith(prefix))


def dominates(mine: Row, other: Row, base: float) -> bool:
    """Costs no more, keeps at least as many specifics, has at least as many
    references answerable, answers at least as many questions."""
    return (mine.total(base) <= other.total(base) and mine.priced.kept >= other.priced.kept
            and mine.ref[0] >= other.ref[0] and mine.qa[0] >= other.qa[0])


def share(ref: tuple[int, int]) -> str:
    """Answerable at reference as a share ("n/a" without references)."""
    return f"{ref[0] / ref[1]:.0%}" if ref[1] else "n/a"


def brief(row: Row, base: float) -> str:
    """cost · specifics · answerable at reference · QA (the README's cell)."""
    return (f"{row.total(base):.3f} · {row.priced.kept:.0%} · {share(row.ref)} · "
            f"{row.qa[0]}/{row.qa[1]}")


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
            f"{mine.priced.kept:.0%} vs {other.priced.kept:.0%}, answerable at reference "
            f"{share(mine.ref)} vs {share(other.ref)}, QA {mine.qa[0]}/{mine.qa[1]} "
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
        + (f"{len(w.cold)} sittings, " if w.cold else "")
        + (f"{len(w.probes)} references in {len({p.reply for p in w.probes})} later turns, "
           if w.probes else "")
        + f"{len(w.facts)} planted facts (write 1.25x, read 0.1x; full history, no caching "
        f"= 1.00; stand-in: mechanisms, not a model; {seconds:.0f}s)",
        table(["system", "replies", "input tokens / reply", "cache-hit share", "folds",
               "summarization tokens", "total cost", "cost, 30% pauses", "specifics kept",
               "answerable at reference", "QA"],
              [[r.name + (f" (error: {r.error})" if r.error else ""), r.priced.replies,
                f"{r.priced.input / max(1, r.priced.replies):,.0f}",
                f"{r.priced.read / max(1, r.priced.input):.0%}", r.folds,
                f"{r.priced.summarization:,}", f"{r.total(base):.3f}",
                f"{(r.priced.cost_paused + r.priced.summarization) / base:.3f}",
                f"{r.priced.kept:.0%}", share(r.ref), f"{r.qa[0]}/{r.qa[1]}"] for r in rows]))


def summary(all_rows: Sequence[tuple[str, Sequence[Row]]]) -> str:
    """One line per system, one column per workload: cost · specifics · answerable
    at reference · QA (the shape of README's table)."""
    names = [r.name for r in all_rows[0][1][1:]] if all_rows else []
    lines = []
    for name in names:
        cells = []
        for _, rows in all_rows:
            row = next((r for r in rows if r.name == name), None)
            cells.append(brief(row, rows[0].priced.cost) if row else "-")
        lines.append([name, *cells])
    return table(["system", *(w for w, _ in all_rows)], lines)


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
    out, lines, all_rows = [], [], []
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
            out.append(workload_table(w, rows, time.monotonic() - t0))
            lines += verdict(rows, name)
            all_rows.append((name, rows))
    finally:
        benv.setup(latency)
        env.fake.neutral = neutral
    mode = "schema-aware stand-in" if schema_aware else "neutral stand-in"
    out.append(report(f"per workload: cost · specifics kept · answerable at reference · QA "
                      f"({size} workloads; {mode})", summary(all_rows)))
    out.append(report(f"the defaults' verdict ({size} workloads; {mode}; stand-in figures)",
                      "\n".join(lines)))
    return "".join(out)
