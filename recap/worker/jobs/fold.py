"""What one apply writes, decided once, before its transaction (:class:`Fold`).

The job plans in its claim; the retention guard (recap.worker.jobs.retain) may narrow
that plan to a prefix and add memories; :func:`fold_of` then settles everything
the apply needs, including the plan for what the batch leaves behind, so the
apply only executes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from recap.core import policy
from recap.core.guard import GuardCounts
from recap.core.memories import Fact
from recap.core.verbatim import attribute_facts
from recap.llm.summarizer import SummaryResult
from recap.llm.tokens import count_tokens
from recap.worker.jobs.claim import Claim

# The kinds a guard-made memory may carry (recap.core.guard.MEMORY_SOURCE).
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
    frozen: int = 0  # answers refused as frozen or empty (recap.core.frozen)


def fold_of(claim: Claim, result: SummaryResult, *, plan: policy.Plan | None = None,
            memories: Sequence[Fact] = (), guard: GuardCounts | None = None) -> Fold:
    """The fold of ``result`` (its text, facts and usage) onto ``claim``: ``plan``
    (default the claim's) is the batch; ``memories`` are stored besides the facts."""
    plan = plan or claim.plan
    tokens = count_tokens(result.text)
    taken = set(plan.batch_ids)
    left = [m for m in claim.messages if m.id not in taken]
    after = policy.plan(left, summary_tokens=tokens, t=claim.settings.thresholds())
    # Who stated each fact is decided from the batch, not taken from the model, and
    # only a verbatim span of the user's own words is theirs (recap.core.verbatim); the
    # guard's lines are verbatim windows of any text, never the user's: each keeps
    # the kind of text it was read from (a tool result, the assistant, a document),
    # else ``guard``.
    facts = (*attribute_facts(result.facts, claim.own_words),
             *(dataclasses.replace(m, source=m.source if m.source in GUARD_SOURCES else "guard")
               for m in memories))
    return Fold(result.text, tokens, plan, facts, result.model,
                result.input_tokens, result.output_tokens, result.estimated_input_tokens,
                after, len(left), guard, result.frozen)
