"""Step 3 of a summarize job: the model calls, the job's only network I/O.

No transaction is open here. :func:`call_summary` makes the summary call (memories
mined in the same calls); :func:`call_repair` makes the retention guard's one repair
call when its review asks for one. What the calls spend is added to the job's
``usage`` as they go, so a failed job still records what it spent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from recap.llm.client import Usage
from recap.llm.summarizer import Summarizer, SummaryResult, sent_texts
from recap.worker.jobs.render import Prompt


class Spent(NamedTuple):
    """What the job's calls had spent at one point (a snapshot of its Usage)."""

    model: str
    input_tokens: int
    output_tokens: int
    calls: int
    estimated_input_tokens: int
    frozen: int
    resends: int = 0
    resend_input_tokens: int = 0

    @classmethod
    def of(cls, usage: Usage) -> Spent:
        return cls(usage.model, usage.input_tokens, usage.output_tokens, usage.calls,
                   usage.estimated_input_tokens, usage.frozen, usage.resends,
                   usage.resend_input_tokens)


@dataclass(frozen=True)
class Answer:
    """The summary call's answer (facts included), the run's reason with the
    fallbacks the calls took, what the summarizer itself sends besides the
    conversation (a model that echoes it is not telling Recap a specific:
    recap.core.prompts.echo), and what was spent by then."""

    result: SummaryResult
    reason: str
    sent: tuple[str, ...]
    spent: Spent


@dataclass(frozen=True)
class RepairAsk:
    """What the retention guard asks the repair call: ``summary`` (without its
    details section) revised to include the specifics of ``items`` (guard.entry lines)."""

    summary: str
    items: tuple[str, ...]


@dataclass(frozen=True)
class Repair:
    """The repair call's summary (None: unusable, the guard settles without it) and
    what the job had spent after it."""

    revised: str | None
    spent: Spent


def call_summary(prompt: Prompt, *, summarizer: Summarizer, usage: Usage) -> Answer:
    """The summary call for ``prompt``; its errors propagate (classified by the job)."""
    result = summarizer.summarize(prompt.previous_summary, prompt.turns, usage=usage,
                                  facts=prompt.facts, known=prompt.known)
    # A fallback was taken: the run's reason says which.
    notes = "".join(f"; {note}" for note in usage.notes)
    return Answer(result, prompt.reason + notes, sent_texts(summarizer), Spent.of(usage))


def call_repair(ask: RepairAsk | None, *, summarizer: Summarizer, usage: Usage) -> Repair | None:
    """The retention guard's repair call, when it asks one (None: nothing is missing,
    or repairs are skipped). A failed call raises: the job fails and is retried,
    nothing was written."""
    if ask is None:
        return None
    return Repair(summarizer.repair(ask.summary, ask.items, usage=usage), Spent.of(usage))
