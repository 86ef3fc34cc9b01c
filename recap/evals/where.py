"""Where Recap kept each planted specific, and what its runs record about the model.

A real-model evaluation asks more than "how many": whether the model's own prose
kept a specific or Recap did (the retention guard's details section, a memory, a
message held in the window), how many of the model's answers were refused as
frozen, and what the repair calls achieved (recap.core.retention.repairs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from recap.evals.facts import Planted, present

# Where a specific counts, first place first: a specific in the prose is the model's.
PLACES = ("summary prose", "details", "memories", "window")


@dataclass(frozen=True)
class Audit:
    """One session's summary runs, summed: answers refused as frozen or empty, repair
    calls made, those that reduced what was missing, repairs skipped, and the tokens
    of the runs that applied nothing."""

    frozen_answers: int = 0
    repairs_called: int = 0
    repairs_helped: int = 0
    repairs_skipped: int = 0
    # Spent by the runs that applied nothing (failed, dead-lettered): real calls too.
    unapplied_input_tokens: int = 0
    unapplied_output_tokens: int = 0
    # Times the batch was sent again after an unusable answer, their input tokens, and
    # folds kept extractively (no usable answer).
    resends: int = 0
    resend_input_tokens: int = 0
    extractive_folds: int = 0


def where_kept(facts: Sequence[Planted], session_id: str) -> dict[str, int]:
    """How many of ``facts`` each place holds (PLACES; a specific counts once, in the
    first place that has it)."""
    from sqlalchemy import select

    from recap.core.retention.guard import details_lines, strip_details
    from recap.db import transaction
    from recap.models import ChatMessage, ChatSession, Memory
    from recap.store.recall import session_scopes

    with transaction() as s:
        summary = s.scalar(select(ChatSession.rolling_summary)
                           .where(ChatSession.id == session_id)) or ""
        memories = list(s.scalars(select(Memory.fact).where(
            Memory.scope.in_(session_scopes(session_id, db=s)))))
        window = list(s.scalars(select(ChatMessage.content)
                                .where(ChatMessage.session_id == session_id)))
    texts = (strip_details(summary), "\n".join(details_lines(summary)), "\n".join(memories),
             "\n".join(window))
    counts = dict.fromkeys(PLACES, 0)
    for fact in facts:
        place = next((p for p, text in zip(PLACES, texts, strict=True) if present(fact, text)),
                     None)
        if place is not None:
            counts[place] += 1
    return counts


def audit(session_id: str) -> Audit:
    """The session's summary runs (the audit rows), summed."""
    from sqlalchemy import select

    from recap.db import transaction
    from recap.models import SummaryRun

    with transaction() as s:
        runs = s.execute(select(SummaryRun.status, SummaryRun.frozen_answers,
                                SummaryRun.repaired, SummaryRun.repair_skipped,
                                SummaryRun.specifics_missing_before_repair,
                                SummaryRun.specifics_missing_after,
                                SummaryRun.input_tokens, SummaryRun.output_tokens,
                                SummaryRun.resends, SummaryRun.resend_input_tokens,
                                SummaryRun.fallback)
                         .where(SummaryRun.session_id == session_id)).all()
    applied = [r for r in runs if r.status == "applied"]
    unapplied = [r for r in runs if r.status != "applied"]
    return Audit(
        frozen_answers=sum(r.frozen_answers or 0 for r in runs),
        repairs_called=sum(bool(r.repaired) for r in applied),
        repairs_helped=sum(bool(r.repaired) and (r.specifics_missing_after or 0)
                           < (r.specifics_missing_before_repair or 0) for r in applied),
        repairs_skipped=sum(bool(r.repair_skipped) for r in applied),
        unapplied_input_tokens=sum(r.input_tokens or 0 for r in unapplied),
        unapplied_output_tokens=sum(r.output_tokens or 0 for r in unapplied),
        resends=sum(r.resends or 0 for r in runs),
        resend_input_tokens=sum(r.resend_input_tokens or 0 for r in runs),
        extractive_folds=sum(bool(r.fallback) for r in applied))
