"""Benchmark: does the retention guard flood? Its pure pieces over the demo conversation.

The 1,000-message demo conversation (pasted logs, configs, metrics tables) is fed
message by message to the policy with the default settings; each batch the
policy takes is folded by the offline extractive summarizer (no model: it keeps
the first sentence of each message, the worst case for retention) and settled by
the guard, with the job's details cap. Printed per batch: specifics required
(batch, previous summary), missing from the summary, put in the details section,
moved to memories, messages held back; and the details section's size. No
services and no network; figures measure the mechanism, not a model.
"""

from __future__ import annotations

from recap.bench.harness.seed import demo_script
from recap.bench.harness.stats import report, table


def simulate(n: int) -> tuple[list[list[object]], dict[str, int]]:
    """(one row per fold, totals) for the first ``n`` demo messages."""
    from recap.core.planning import policy
    from recap.core.prompts.summarize import Turn
    from recap.core.retention import guard
    from recap.llm.offline import OfflineSummarizer
    from recap.llm.tokens import count_tokens
    from recap.settings import get_settings

    settings = get_settings()
    t = settings.thresholds()
    cap = int(settings.details_share * settings.max_summary_tokens)
    active: list[policy.MessageInfo] = []
    content: dict[int, tuple[str, str]] = {}
    summary: str | None = None
    summary_tokens = 0
    held_before: frozenset[int] = frozenset()
    rows: list[list[object]] = []
    totals = dict.fromkeys(("folds", "required", "missing", "details", "memories", "held"), 0)
    for i, (role, text) in enumerate(demo_script(n)):
        content[i] = (role, text)
        active.append(policy.MessageInfo(i, role, count_tokens(text)))
        plan = policy.plan(active, summary_tokens=summary_tokens, t=t)
        if not plan.should_summarize:
            continue
        turns = [Turn(j, *content[j]) for j in plan.batch_ids]
        folded = OfflineSummarizer().summarize(summary, turns).text
        needed = guard.required(turns, summary)
        lost = guard.missing(needed, summary=folded)
        units = [[x.id for x in u] for u in policy.units(
            [x for x in active if x.id in set(plan.batch_ids)])]
        done = guard.settle(turns=turns, units=units, previous=summary, summary=folded,
                            facts=(), details_cap=cap, count=count_tokens,
                            spill=plan.mode == "aggressive", held_before=held_before)
        details = done.summary[len(guard.strip_details(done.summary)):]
        rows.append([len(rows) + 1, plan.mode, len(plan.batch_ids),
                     len(guard.required(turns, None)),
                     len(guard.required([], summary)), len(lost), done.specifics_in_details,
                     done.specifics_to_memories, len(done.held_ids), count_tokens(details)])
        for key, value in (("folds", 1), ("required", len(needed)), ("missing", len(lost)),
                           ("details", done.specifics_in_details),
                           ("memories", done.specifics_to_memories),
                           ("held", len(done.held_ids))):
            totals[key] += value
        gone = set(done.condensed_ids)
        active = [x for x in active if x.id not in gone]
        held_before = frozenset(done.held_ids)
        summary, summary_tokens = done.summary, count_tokens(done.summary)
    return rows, totals


def run(quick: bool = False) -> str:
    n = 200 if quick else 1000
    rows, totals = simulate(n)
    shown = rows if len(rows) <= 20 else rows[:10] + [["..."] * 10] + rows[-5:]
    return report(
        f"specifics: the retention guard over the {n}-message demo conversation "
        "(offline extractive summarizer, default settings; mechanism, not a model)",
        table(["fold", "mode", "batch msgs", "batch specifics", "previous-summary specifics",
               "missing from summary", "in details", "to memories", "held back",
               "details tokens"], shown)
        + f"\n\n{totals['folds']} folds: {totals['required']} specifics required in all, "
          f"{totals['missing']} missing from the summaries, {totals['details']} put in "
          f"details, {totals['memories']} moved to memories, {totals['held']} messages "
          f"held back (per fold: {totals['required'] / max(1, totals['folds']):.0f} required, "
          f"{totals['memories'] / max(1, totals['folds']):.0f} memories)")
