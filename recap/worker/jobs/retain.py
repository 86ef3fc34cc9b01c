"""Step 4 of a summarize job: the retention guard, and the :class:`Fold` the apply
writes. Pure: it reads the claim and the answers, never the database.

:func:`review` checks the summary call's answer against the specifics of the
batch and of the previous summary (the rules: recap.core.retention.guard; what a tool
returned and nothing used stays in the archive: recap.core.retention.salience) and, when
some are missing, asks for ONE repair call (under the adaptive policy only in a
chat: recap.core.planning.adaptive.repairs; none when repairs have stopped helping this
model lately: recap.core.retention.repairs). :func:`decide` settles the rest: the details
section, messages held back in the window (the batch shrinks to the condensed
prefix, so the apply's counters stay exact), memories; and returns the Fold,
whether the guard is on or off (RECAP_RETENTION_GUARD).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from recap.core.memories.facts import Fact
from recap.core.memories.verbatim import attribute_facts
from recap.core.planning import adaptive, policy
from recap.core.prompts import echo
from recap.core.retention import entries, guard, repairs, salience
from recap.core.retention.guard import GuardCounts, Settlement
from recap.errors import UnusableSummary
from recap.llm.summarizer import SummaryResult
from recap.llm.tokens import count_tokens
from recap.worker.jobs.call import Answer, Repair, RepairAsk, Spent
from recap.worker.jobs.claim import Claim

# The kinds a guard-made memory may carry (recap.core.retention.guard.MEMORY_SOURCE).
GUARD_SOURCES = ("tool", "assistant", "document", "guard")


@dataclass(frozen=True)
class Fold:
    """The summary to write, the batch it condenses (``plan.batch_ids``), the
    memories to store, what the calls spent, the guard's counts (None: guard off)
    ``after``, the plan on the messages the batch leaves (``left`` of them), and
    ``frozen``, the answers refused as frozen or empty before this one."""

    summary: str
    summary_tokens: int
    plan: policy.Plan
    facts: tuple[Fact, ...]
    model: str
    input_tokens: int
    output_tokens: int
    estimated_input_tokens: int
    after: policy.Plan
    left: int
    guard: GuardCounts | None = None
    frozen: int = 0  # answers refused as frozen or empty (recap.core.prompts.frozen)
    resends: int = 0  # times the batch was sent again after an unusable answer
    resend_input_tokens: int = 0
    fallback: bool = False  # kept extractively: no way of asking the model worked


@dataclass(frozen=True)
class Review:
    """What the guard found in the summary call's answer: the summary and the
    previous one with Recap's own prompt cut out (``corpus``), the facts that are
    not echoes, how it ranks the specifics, those ``needed`` and those ``missing``
    from the answer, and the repair call it asks (None: none, or ``skipped``)."""

    corpus: str
    summary: str
    previous: str | None
    facts: tuple[Fact, ...]
    salience: salience.Salience
    needed: frozenset[str]
    missing: frozenset[str]
    skipped: bool
    ask: RepairAsk | None


def review(claim: Claim, answer: Answer) -> Review | None:
    """The guard's review of ``answer`` (None: the guard is off).

    What echoes Recap's own prompt (recap.core.prompts.echo) is cut from the summary and
    the facts first, and is never a specific; UnusableSummary when nothing else is
    left of the summary.
    """
    settings = claim.settings
    if not settings.retention_guard:
        return None
    may_repair = _may_repair(claim)
    corpus = echo.sent_corpus(answer.sent)
    summary = echo.strip_echo(answer.result.text, corpus)
    if not guard.strip_details(summary).strip():
        raise UnusableSummary("the summary only echoes Recap's own prompt; not applied")
    previous = echo.strip_echo(claim.previous_summary or "", corpus) or None
    # Neither Recap's prompt echoed back nor its own kept lines copied back is a fact.
    kept_lines = guard.details_lines(previous or "")
    facts = tuple(f for f in answer.result.facts
                  if not echo.is_echo(f.fact, corpus) and not entries.restates(f.fact, kept_lines))
    turns = claim.turns  # as stored, not as cut for the call
    sal = dataclasses.replace(
        claim.ranked if claim.ranked is not None else guard.default_salience(turns),
        archive=settings.archive_summarized)
    needed = guard.required(turns, previous, sal)
    missing = guard.missing(needed, summary=summary, facts=facts)
    skipped = bool(missing) and not may_repair
    ask = (RepairAsk(guard.strip_details(summary),
                     tuple(guard.repair_items(turns, previous, missing,
                                              limit=repairs.MAX_REPAIR_ITEMS)))
           if missing and not skipped else None)
    return Review(corpus, summary, previous, facts, sal, needed, missing, skipped, ask)


def _may_repair(claim: Claim) -> bool:
    """Whether the guard may ask a repair call: not under the adaptive policy outside
    a chat, nor when repairs have stopped helping this model lately."""
    messages = claim.messages
    return not ((claim.settings.policy == "adaptive" and not adaptive.repairs(
        adaptive.per_message(sum(m.token_count for m in messages), len(messages))))
        or not repairs.should_repair(claim.recent_repairs))


def decide(claim: Claim, answer: Answer, review: Review | None,
           repair: Repair | None) -> Fold:
    """The fold the apply writes for ``answer`` (and the ``repair`` that ``review``
    asked, if any). With the guard off (``review`` None), the answer as it is.

    The repair's summary replaces the answer's only if it misses fewer specifics.
    """
    plan = dataclasses.replace(claim.plan, reason=answer.reason)
    if review is None:
        return fold_of(claim, answer.result, plan=plan)
    summary, missing = review.summary, review.missing
    if repair is not None and repair.revised is not None:
        revised = echo.strip_echo(repair.revised, review.corpus)
        still = guard.missing(review.needed, summary=revised, facts=review.facts)
        if len(still) < len(missing):  # a repair that loses more is not taken
            summary, missing = revised, still
    taken = set(plan.batch_ids)
    infos = [m for m in claim.messages if m.id in taken]
    settled = _settle(claim, review, infos, summary=summary, missing=missing)
    if settled.held_ids:
        kept = set(settled.condensed_ids)
        plan = dataclasses.replace(plan, batch_ids=settled.condensed_ids,
                                   batch_tokens=sum(m.token_count for m in infos
                                                    if m.id in kept))
    spent = repair.spent if repair is not None else answer.spent
    result = SummaryResult(settled.summary, spent.model, spent.input_tokens,
                           spent.output_tokens, spent.calls, spent.estimated_input_tokens,
                           list(review.facts), spent.frozen, spent.resends,
                           spent.resend_input_tokens)
    return fold_of(claim, result, plan=plan, memories=settled.memories,
                   counts=_counts(review, settled, missing=missing, before=answer.spent,
                                 repair=repair))


def _settle(claim: Claim, review: Review, infos: Sequence[policy.MessageInfo], *,
            summary: str, missing: frozenset[str]) -> Settlement:
    """What the guard keeps of what ``summary`` still misses: details lines,
    memories, messages held back in the window."""
    settings, turns = claim.settings, claim.turns
    units = ([[m.id for m in unit] for unit in policy.units(infos)] if infos
             else [[t.id] for t in turns])
    return guard.settle(
        turns=turns, units=units, previous=review.previous, summary=summary,
        corpus=review.corpus, facts=review.facts,
        details_cap=int(settings.details_share * settings.max_summary_tokens),
        count=count_tokens, salience=review.salience,
        spill=claim.plan.mode is policy.Mode.AGGRESSIVE or settings.policy == "adaptive",
        # Only a fold with something still missing can hold a message back.
        held_before=claim.held_before if missing else frozenset())


def _counts(review: Review, settled: Settlement, *, missing: frozenset[str], before: Spent,
            repair: Repair | None) -> GuardCounts:
    """The guard's summary_runs columns; the repair's cost is what the job spent
    between the summary call (``before``) and the end of the repair call."""
    after = repair.spent if repair is not None else before
    return GuardCounts(
        specifics_total=len(review.needed),
        specifics_missing_before_repair=len(review.missing),
        specifics_missing_after=len(missing),
        specifics_in_details=settled.specifics_in_details,
        specifics_to_memories=settled.specifics_to_memories,
        messages_held_back=len(settled.held_ids), repaired=after.calls > before.calls,
        repair_input_tokens=after.input_tokens - before.input_tokens,
        repair_output_tokens=after.output_tokens - before.output_tokens,
        repair_skipped=review.skipped,
        specifics_stated=settled.by_rank[0], specifics_referred=settled.by_rank[1],
        specifics_used=settled.by_rank[2], specifics_rest=settled.by_rank[3],
        specifics_archived=settled.archived)


def fold_of(claim: Claim, result: SummaryResult, *, plan: policy.Plan | None = None,
            memories: Sequence[Fact] = (), counts: GuardCounts | None = None) -> Fold:
    """The fold of ``result`` (its text, facts and usage) onto ``claim``: ``plan``
    (default the claim's) is the batch; ``memories`` are stored besides the facts;
    ``counts`` are the guard's (None: it is off)."""
    plan = plan or claim.plan
    tokens = count_tokens(result.text)
    taken = set(plan.batch_ids)
    left = [m for m in claim.messages if m.id not in taken]
    after = policy.plan(left, summary_tokens=tokens, t=claim.settings.thresholds())
    # Who stated each fact is decided from the batch, not taken from the model, and
    # only a verbatim span of the user's own words is theirs (recap.core.memories.
    # verbatim); the guard's lines are verbatim windows of any text, never the user's:
    # each keeps the kind of text it was read from (a tool result, the assistant, a
    # document), else ``guard``.
    facts = (*attribute_facts(result.facts, claim.own_words),
             *(dataclasses.replace(m, source=m.source if m.source in GUARD_SOURCES else "guard")
               for m in memories))
    return Fold(result.text, tokens, plan, facts, result.model,
                result.input_tokens, result.output_tokens, result.estimated_input_tokens,
                after, len(left), counts, result.frozen, result.resends,
                result.resend_input_tokens)
