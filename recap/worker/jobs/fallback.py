"""When no way of asking the model gives a usable summary: the batch kept
extractively (recap.core.retention.extractive), so no session grows past its
budget because a model is weak. Pure: it reads the claim and what the calls
spent, never the database.

:func:`due` says when: every way of asking failed (an UnusableSummary out of the
summary call, or the guard's review finding nothing but an echo), or a job on
its last attempt (or failed for good) while its session is at capacity. A
transient error with retries left keeps its retry and backoff. :func:`fold`
builds the Fold the apply writes: the retention guard keeps the specifics the
extractive lines miss (without a repair call: the model just failed), the
archive keeps the messages, and the run records ``fallback``.
"""

from __future__ import annotations

import dataclasses

from recap.core.planning import policy
from recap.core.prompts.summarize import cap_summary
from recap.core.retention import extractive
from recap.errors import LLMError, TransientLLMError, UnusableSummary
from recap.llm.client import Usage, classify
from recap.llm.summarizer import SummaryResult
from recap.llm.tokens import count_tokens, split_by_tokens
from recap.worker.jobs import retain
from recap.worker.jobs.call import Answer, Spent
from recap.worker.jobs.claim import Claim
from recap.worker.jobs.outcome import Job, describe_error

# How much of the error the run's reason quotes.
REASON_ERROR_CHARS = 300


def due(claim: Claim, exc: BaseException, *, job: Job) -> bool:
    """Whether ``exc`` (raised before the apply) ends the job with an extractive fold."""
    if isinstance(exc, UnusableSummary):
        return True
    mapped = classify(exc) or exc
    if not isinstance(mapped, LLMError):
        return False  # a database or time-limit error: the job's retry path
    spent = job.final_attempt or not isinstance(mapped, TransientLLMError)
    return spent and at_capacity(claim)


def at_capacity(claim: Claim) -> bool:
    """Whether the claimed session is at capacity (recap.core.planning.policy.CAPACITY_USAGE
    of its budget): it may not wait out a dead-letter cool-down."""
    active = sum(m.token_count for m in claim.messages)
    summary = count_tokens(claim.previous_summary or "")
    return (policy.usage(summary, active, claim.settings.context_budget_tokens)
            >= policy.CAPACITY_USAGE)


def fold(claim: Claim, exc: BaseException, *, usage: Usage, reason: str,
         secret: str | None) -> retain.Fold:
    """The extractive Fold of ``claim``'s batch after ``exc``; ``reason`` is the run's
    so far, ``usage`` what the failed calls spent (recorded with the run)."""
    settings = claim.settings
    cap = settings.max_summary_tokens
    if settings.retention_guard:  # leave the details section its room
        cap -= int(settings.details_share * settings.max_summary_tokens)
    text = extractive.fold(claim.previous_summary, claim.turns, max_tokens=max(1, cap),
                           count=count_tokens)
    # Within the summary's cap whatever the lines hold (the guard keeps what is cut).
    text = cap_summary(text, max_tokens=max(1, cap), count=count_tokens, split=split_by_tokens)
    notes = "".join(f"; {note}" for note in usage.notes if note not in reason)
    why = describe_error(exc, secret=secret)[:REASON_ERROR_CHARS]
    answer = Answer(SummaryResult.of(text, usage), f"{reason}{notes}; kept extractively "
                    f"(no usable answer from the model: {why})", (), Spent.of(usage))
    review = retain.review(claim, answer)
    if review is not None:  # no repair call: the model has just failed this batch
        review = dataclasses.replace(review, ask=None)
    return dataclasses.replace(retain.decide(claim, answer, review, None), fallback=True)
