"""Between steps 1 and 2 of a summarize job: the batch cut to the requests the job
may make, so its model calls fit its soft time limit whatever the model's tokenizer.

A job may make :meth:`Settings.calls_per_job` calls (each may run to
RECAP_LLM_TIMEOUT_S). The claim cuts its planned batch to what the requests carry
when the ratio of the model's tokens to Recap's is already known
(:func:`carried_tokens`, recap.llm.calibrate). :func:`fit` learns the ratio
when it is not known yet (one count_tokens call, within its own deadline), then
keeps the batch's leading units that the summary requests carry, chunked as the
summarizer chunks them at that ratio, at most :func:`requests_per_job` of them; the
rest stays in the window for the follow-up job (the claim's plan, turns, ranking and
brief follow the cut batch: recap.worker.jobs.claim.narrowed). One unit is always
taken so a session progresses: a message larger than the requests carry is clipped
to its first and last parts (recap.worker.jobs.render); a tool call and its results
are condensed together even when they take more requests.
"""

from __future__ import annotations

from dataclasses import dataclass

from recap.core.prompts.summarize import turns_within
from recap.llm import calibrate
from recap.llm.summarizer import ClaudeSummarizer, Summarizer, token_ratio
from recap.settings import Settings
from recap.worker.jobs.claim import Claim, narrowed
from recap.worker.jobs.render import render

# What chunk_turns counts for each message's wrapper (recap.core.prompts.summarize).
MESSAGE_OVERHEAD = 12
# A clipped message's marker line and joins, in Recap's tokens.
CLIP_MARKER_TOKENS = 48


@dataclass(frozen=True)
class Sized:
    """The claim cut to the job's requests, the ratio its requests are sized by, and
    the most tokens one message is sent with (None: the job's budget alone)."""

    claim: Claim
    ratio: float
    clip_to: int | None = None


def carried_tokens(settings: Settings, summarizer: Summarizer, *,
                   previous: str | None) -> int | None:
    """The most of Recap's tokens the job's requests carry after the summary
    ``previous``, by the ratio already learnt for ``summarizer`` (no I/O;
    1 when calibration is off); None when no ratio is known yet (:func:`fit` learns
    it and cuts the batch) or the summarizer makes no requests."""
    if not isinstance(summarizer, ClaudeSummarizer):
        return None
    ratio = calibrate.known_ratio(summarizer.config) if summarizer.config.calibrate else 1.0
    if ratio is None:
        return None
    room = summarizer.chunk_room(previous, ratio)
    return requests_per_job(settings, summarizer) * (room - MESSAGE_OVERHEAD)


def requests_per_job(settings: Settings, summarizer: ClaudeSummarizer) -> int:
    """The summary requests one job may make: its calls, less the retention guard's
    repair call, each request with its own memory-mining call when facts are mined
    apart (RECAP_SUMMARY_MODE=plain); at least one."""
    calls = settings.calls_per_job() - (1 if settings.retention_guard else 0)
    per_request = 2 if settings.extract_memories and summarizer.plain else 1
    return max(1, calls // per_request)


def fit(claim: Claim, summarizer: Summarizer) -> Sized:
    """``claim`` cut to what :func:`requests_per_job` requests carry; the ratio is
    learnt first when it is not known (recap.llm.calibrate.token_ratio: never raises
    for the server's sake; Celery's soft time limit is raised)."""
    ratio = token_ratio(summarizer, claim.previous_summary, claim.sent or claim.turns)
    if not isinstance(summarizer, ClaudeSummarizer):
        return Sized(claim, ratio)
    requests = requests_per_job(claim.settings, summarizer)
    room = summarizer.chunk_room(claim.previous_summary, ratio)
    clip_to = max(1, requests * (room - MESSAGE_OVERHEAD) - CLIP_MARKER_TOKENS)
    config = summarizer.config
    why = f"what {requests} request(s) carry at {ratio:.2f} of the model's tokens per Recap's"
    sized = claim
    while True:  # a cut batch is ranked and briefed again: its turns are measured again
        turns = render(sized, ratio=ratio, clip_to=clip_to).turns
        keep = turns_within(turns, max_chunks=requests, max_tokens=room, count=config.count,
                            split=config.split)
        cut = narrowed(claim, keep, why=why) if keep < len(sized.plan.batch_ids) else sized
        if len(cut.plan.batch_ids) >= len(sized.plan.batch_ids):
            return Sized(sized, ratio, clip_to)
        sized = cut
