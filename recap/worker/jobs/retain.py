"""The retention guard inside a job: :func:`retain` is its one entry point.

The job calls it between the summary call and the apply, whether the guard is
on or off (RECAP_RETENTION_GUARD), and hands what it returns to the apply. It
checks the new summary against the specifics of the batch and of the previous
summary (the rules: recap.core.retention.guard; what a tool returned and nothing used stays in
the archive: recap.core.retention.salience), makes at most ONE repair call when some
are missing (under the adaptive policy only in a chat: recap.core.planning.adaptive.repairs;
none when repairs have stopped helping this model lately: recap.core.retention.repairs),
and settles the rest: the details section, messages held back in the window (the
batch shrinks to the condensed prefix, so the apply's counters stay exact),
memories. Runs outside any transaction, like every call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sqlalchemy import select

from recap.core.planning import adaptive, policy
from recap.core.prompts import echo
from recap.core.prompts.summarize import Turn
from recap.core.retention import entries, guard, repairs, salience
from recap.db import core_transaction
from recap.errors import UnusableSummary
from recap.llm.client import Usage
from recap.llm.summarizer import Summarizer, SummaryResult, sent_texts
from recap.llm.tokens import count_tokens
from recap.models import runs_table as RUNS
from recap.worker.jobs.claim import Claim
from recap.worker.jobs.fold import Fold, fold_of


def retain(claim: Claim, result: SummaryResult, *, turns: Sequence[Turn],
           summarizer: Summarizer, usage: Usage) -> Fold:
    """The fold the apply writes for ``result`` (the summary call's answer, facts
    included). With the guard off, ``result`` as it is.

    ``turns`` are the batch as stored (not clipped for the call); the repair
    call's usage is added to ``usage``; its answer replaces the summary only if
    it misses fewer specifics. A failed repair call raises (the job fails and is
    retried; nothing was written). What echoes Recap's own prompt (recap.core.prompts.echo)
    is cut from the summary and the facts first, and is never a specific;
    UnusableSummary when nothing else is left of the summary.
    """
    settings = claim.settings
    if not settings.retention_guard:
        return fold_of(claim, result)
    corpus = echo.sent_corpus(sent_texts(summarizer))
    summary = echo.strip_echo(result.text, corpus)
    if not guard.strip_details(summary).strip():
        raise UnusableSummary("the summary only echoes Recap's own prompt; not applied")
    previous = echo.strip_echo(claim.previous_summary or "", corpus) or None
    # Neither Recap's prompt echoed back nor its own kept lines copied back is a fact.
    kept_lines = guard.details_lines(previous or "")
    facts = [f for f in result.facts
             if not echo.is_echo(f.fact, corpus) and not entries.restates(f.fact, kept_lines)]
    sal = dataclasses.replace(
        salience.rank(claim.voices.batch, claim.voices.later) if claim.voices.batch
        else guard.default_salience(turns), archive=settings.archive_summarized)
    needed = guard.required(turns, previous, sal)
    before = guard.missing(needed, summary=summary, facts=facts)
    after, repaired = before, False
    skipped = bool(before) and (
        (settings.policy == "adaptive" and not adaptive.repairs(adaptive.per_message(
            sum(m.token_count for m in claim.messages), len(claim.messages))))
        or not repairs.should_repair(recent_repairs(summarizer.model)))
    spent_in, spent_out = usage.input_tokens, usage.output_tokens
    if before and not skipped:
        items = guard.repair_items(turns, previous, before)
        calls = usage.calls
        revised = summarizer.repair(guard.strip_details(summary), items, usage=usage)
        repaired = usage.calls > calls
        if revised is not None:
            revised = echo.strip_echo(revised, corpus)
            still = guard.missing(needed, summary=revised, facts=facts)
            if len(still) < len(before):  # a repair that loses more is not taken
                summary, after = revised, still
    taken = set(claim.plan.batch_ids)
    infos = [m for m in claim.messages if m.id in taken]
    units = ([[m.id for m in unit] for unit in policy.units(infos)] if infos
             else [[t.id] for t in turns])
    settled = guard.settle(
        turns=turns, units=units, previous=previous, summary=summary, corpus=corpus,
        facts=facts, details_cap=int(settings.details_share * settings.max_summary_tokens),
        count=count_tokens, salience=sal,
        spill=claim.plan.mode is policy.Mode.AGGRESSIVE or settings.policy == "adaptive",
        # Only a fold with something still missing can hold a message back: the
        # others skip this read (a transaction of its own).
        held_before=(held_before(claim.session_id, [m.id for m in infos]) if after
                     else frozenset()))
    plan = claim.plan
    if settled.held_ids:
        kept = set(settled.condensed_ids)
        plan = dataclasses.replace(plan, batch_ids=settled.condensed_ids,
                                   batch_tokens=sum(m.token_count for m in infos
                                                    if m.id in kept))
    counts = guard.GuardCounts(
        specifics_total=len(needed), specifics_missing_before_repair=len(before),
        specifics_missing_after=len(after),
        specifics_in_details=settled.specifics_in_details,
        specifics_to_memories=settled.specifics_to_memories,
        messages_held_back=len(settled.held_ids), repaired=repaired,
        repair_input_tokens=usage.input_tokens - spent_in,
        repair_output_tokens=usage.output_tokens - spent_out, repair_skipped=skipped,
        specifics_stated=settled.by_rank[0], specifics_referred=settled.by_rank[1],
        specifics_used=settled.by_rank[2], specifics_rest=settled.by_rank[3],
        specifics_archived=settled.archived)
    return fold_of(claim, SummaryResult.of(settled.summary, usage, facts), plan=plan,
                   memories=settled.memories, guard=counts)


def recent_repairs(model: str) -> list[repairs.RepairOutcome]:
    """The repair outcomes of ``model``'s latest applied runs that had something
    missing before repair (any session), newest first."""
    with core_transaction() as s:
        rows = s.execute(select(RUNS.c.repaired, RUNS.c.specifics_missing_before_repair,
                                RUNS.c.specifics_missing_after)
                         .where(RUNS.c.model == model, RUNS.c.status == "applied",
                                RUNS.c.specifics_missing_before_repair > 0)
                         .order_by(RUNS.c.id.desc()).limit(repairs.REPAIR_WINDOW)).all()
    return [repairs.RepairOutcome(bool(r.repaired),
                                  bool(r.repaired) and r.specifics_missing_after
                                  < r.specifics_missing_before_repair) for r in rows]


def held_before(session_id: str, batch: Sequence[int]) -> frozenset[int]:
    """The messages of ``batch`` (ids, oldest first) that the last applied run held
    back: it condensed a prefix ending at its last id and left the next ones, which
    are still the oldest candidates, so they lead this batch."""
    with core_transaction() as s:
        last = s.execute(select(RUNS.c.last_message_id, RUNS.c.messages_held_back)
                         .where(RUNS.c.session_id == session_id, RUNS.c.status == "applied")
                         .order_by(RUNS.c.id.desc()).limit(1)).one_or_none()
    if last is None or not last.messages_held_back or last.last_message_id is None:
        return frozenset()
    after = [m for m in batch if m > last.last_message_id]
    return frozenset(after[:last.messages_held_back])
