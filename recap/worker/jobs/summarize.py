"""One summarize job, as a pipeline of steps called in order by :func:`summarize`:

0. clear (recap.worker.jobs.clear): old tool output to the archive, stubs in the
   window, no model call; its own lease and fenced write, then the steps below
   decide on what is left whether a fold is still needed
1. claim (recap.worker.jobs.claim): the lease and everything the job reads, one
   transaction; a model whose latest folds were all kept extractively is then
   asked without resends (recap.core.planning.resends); the batch is cut to what
   the job's requests carry when the ratio of the model's tokens to Recap's is
   known (recap.worker.jobs.sizing)
2. sizing (recap.worker.jobs.sizing): the ratio learnt if it is not known yet, and
   the batch cut to what the job's requests carry (the rest is the follow-up's)
3. render (recap.worker.jobs.render): what the model is sent (pure)
4. call (recap.worker.jobs.call): the model, with no transaction open
5. retain (recap.worker.jobs.retain): the retention guard and the Fold (pure);
   when no way of asking gave a usable answer, the batch kept extractively
   instead (recap.worker.jobs.fallback)
6. apply (recap.worker.jobs.apply): the fenced write, one transaction

The apply is fenced by the lease token and the summary version, and deletes (or
archives) exactly the claimed ids or nothing. A job that does not apply records
why (recap.worker.jobs.failure) and changes nothing else.
"""

from __future__ import annotations

import time

from recap import tracing
from recap.core.planning import resends
from recap.core.tenant import tenant_of
from recap.errors import Superseded
from recap.llm.client import Usage
from recap.worker.jobs import fallback, retain, sizing
from recap.worker.jobs.apply import apply_summary
from recap.worker.jobs.call import Answer, call_repair, call_summary
from recap.worker.jobs.claim import claim_session
from recap.worker.jobs.clear import clear_tool_results
from recap.worker.jobs.failure import record_failed, record_failure
from recap.worker.jobs.outcome import Job, Outcome, log_outcome
from recap.worker.jobs.render import Prompt, render
from recap.worker.jobs.resources import Resources


def summarize(session_id: str, *, job: Job, res: Resources, force: bool = False) -> Outcome:
    """Run one job end to end and record its outcome.

    ``force`` (``recap summarize --force``): condense the candidate batch even when
    no rule fires; the run's reason starts with ``forced:``.

    Uses ``res``'s summarizer, tuned for the session's overrides. Raises the
    (classified) error after recording a ``failed`` or ``dead`` run, so the
    caller can decide on a retry; the session is unchanged.
    """
    with tracing.span("recap.summarize_session", session_id=session_id, task_id=job.task_id,
                      attempt=job.attempt) as span:
        outcome = log_outcome(_summarize(session_id, job=job, res=res, force=force), job)
        span.set_attribute("recap.outcome", outcome.status)
        return outcome


def _summarize(session_id: str, *, job: Job, res: Resources, force: bool) -> Outcome:
    """The steps of one job; the outcome is logged by the caller (a raised error's
    failed or dead run is logged where it is recorded)."""
    clear_tool_results(session_id, job=job, res=res)  # free: no model call
    claimed = claim_session(session_id, job=job, res=res, force=force,
                            carried=lambda tuned, previous: sizing.carried_tokens(
                                tuned, res.summarizer_for(tuned, session_id=session_id),
                                previous=previous))
    if isinstance(claimed, Outcome):
        return claimed
    # A model whose latest folds were all kept extractively is asked once.
    budget = resends.allowed(claimed.recent_folds, claimed.settings.max_resends)
    summarizer = res.summarizer_for(claimed.settings.model_copy(update={"max_resends": budget}),
                                    session_id=session_id)
    usage = Usage(summarizer.model)
    if budget < claimed.settings.max_resends:
        usage.notes.append(resends.withheld_note(claimed.recent_folds,
                                                  tenant=tenant_of(session_id)))
    answer: Answer | None = None
    prompt: Prompt | None = None
    started = time.monotonic()
    try:
        # The model's tokens per Recap's (asked of the server once per process), and
        # the batch cut to what the job's requests carry at that ratio.
        sized = sizing.fit(claimed, summarizer)
        claimed = sized.claim
        prompt = render(claimed, ratio=sized.ratio, clip_to=sized.clip_to)
        try:
            answer = call_summary(prompt, summarizer=summarizer, usage=usage)
            review = retain.review(claimed, answer)  # None: the guard is off
            repair = (call_repair(review.ask, summarizer=summarizer, usage=usage)
                      if review else None)
            fold = retain.decide(claimed, answer, review, repair)
        except Exception as exc:
            # No usable answer any way, or no retry left at capacity: kept extractively.
            if not fallback.due(claimed, exc, job=job):
                raise
            fold = fallback.fold(claimed, exc, usage=usage, reason=(answer or prompt).reason,
                                 secret=res.secret)
        return apply_summary(claimed, fold, job=job, latency_ms=_ms(started))
    except Superseded as exc:
        return record_failure(claimed, exc, job=job, status="superseded",
                              model=summarizer.model, latency_ms=None)
    except Exception as exc:  # recorded and logged there, then raised for a retry
        reason = (answer or prompt or claimed.plan).reason
        raised = record_failed(claimed, exc, job=job, reason=reason,
                               model=summarizer.model, latency_ms=_ms(started),
                               secret=res.secret, spent=usage)
        if raised is exc:
            raise
        raise raised from exc


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
