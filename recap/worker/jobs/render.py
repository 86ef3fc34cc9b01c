"""Step 2 of a summarize job: what the model is sent (pure).

The claim holds the batch as stored; :func:`render` cuts what the call is sent
from it (pasted blocks above the cap as excerpts, the whole within the job's
token budget) and says so in the run's reason; with tool output cleared, the
batch's tool results are sent as their stubs and the lines that were used
(:attr:`Claim.sent`). The retention guard still reads the stored turns
(recap.worker.jobs.retain).
"""

from __future__ import annotations

from dataclasses import dataclass

from recap.core.prompts.bulk import excerpt_turns
from recap.core.prompts.summarize import Turn, clip_turns
from recap.llm.tokens import count_tokens, split_by_tokens
from recap.worker.jobs.claim import Claim


@dataclass(frozen=True)
class Prompt:
    """What the summary call is sent: the previous summary, the batch as cut for
    the call, the memories it may mark replaced, whether it mines facts; and the
    plan's reason with what the cut left out."""

    previous_summary: str | None
    turns: tuple[Turn, ...]
    known: tuple[tuple[int, str], ...]
    facts: bool
    reason: str


def render(claim: Claim, *, ratio: float = 1.0, clip_to: int | None = None) -> Prompt:
    """The prompt of ``claim``'s summary call; ``ratio``: the model's tokens per
    Recap's (recap.llm.calibrate), so the job's budget holds in the model's tokens;
    ``clip_to``: the most of Recap's tokens one message may be sent with besides
    (what the job's requests carry: recap.worker.jobs.sizing)."""
    tuned = claim.settings
    turns, excerpted = excerpt_turns(claim.sent or claim.turns,
                                     max_tokens=tuned.bulk_excerpt_tokens(), count=count_tokens)
    cap = int(tuned.job_token_budget() / ratio)
    turns, clipped = clip_turns(turns, max_tokens=cap if clip_to is None else min(cap, clip_to),
                                count=count_tokens, split=split_by_tokens)
    notes = "".join(f"; {note}" for note in (excerpted, clipped) if note)
    # With memories on, the same calls mine the batch before its rows go.
    return Prompt(claim.previous_summary, tuple(turns), claim.known, tuned.extract_memories,
                  claim.plan.reason + notes)
