"""Rebuild a session's summary from its archive (RECAP_ARCHIVE_SUMMARIZED=true).

For deployments that keep history and want to re-summarize with a better prompt
or model: the archived messages are folded from scratch, in chunks, and the new
summary replaces the old one under the same lease and version fence as a job.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, NamedTuple

from sqlalchemy import exists, func, select

from recap.core.planning import policy
from recap.core.prompts import echo
from recap.core.prompts.bulk import excerpt_turns
from recap.core.prompts.summarize import Turn
from recap.core.retention.guard import GuardCounts, Settlement
from recap.core.retention.rebuild import guard_rebuild
from recap.db import db_now, rowcount, transaction
from recap.errors import InvalidInput, SessionBusy, SessionNotFound, Superseded
from recap.llm.summarizer import SummaryResult, sent_texts
from recap.llm.tokens import count_tokens
from recap.models import ArchivedMessage, ChatSession
from recap.models import messages_table as MESSAGES
from recap.settings import Settings, effective
from recap.store.fence import lease_expiry, release, take_lease
from recap.store.plans import message_infos
from recap.store.rows import save_memories, save_summary_version
from recap.store.runs import RunRecord, record_run
from recap.worker.jobs.apply import write_summary
from recap.worker.jobs.outcome import Job, Outcome, log_outcome
from recap.worker.jobs.resources import Resources


class _Rebuilt(NamedTuple):
    """What the rebuild's model call (and the guard) made, for the write."""

    text: str
    summary_tokens: int
    result: SummaryResult
    settled: Settlement | None
    counts: GuardCounts | None
    reason: str
    latency_ms: int


def resummarize(session_id: str, *, res: Resources, job: Job | None = None) -> Outcome:
    """Replace the rolling summary with one rebuilt from every archived message,
    through the retention guard (recap.core.retention.rebuild) when it is on: what the
    current summary keeps, and the archive's specifics, stay kept.

    Raises SessionNotFound; InvalidInput when the archive does not hold every
    condensed message (some were deleted before archiving was on); SessionBusy
    when a job holds the session; Superseded when a job applied meanwhile. The
    summarizer's errors propagate with nothing changed.
    """
    job = job or Job(task_id=f"resummarize-{uuid.uuid4()}")
    token = str(uuid.uuid4())
    current, version, overrides, turns = _claim_archive(session_id, token=token,
                                                        lease_s=res.settings.lease_s)
    tuned = effective(res.settings, overrides)
    try:
        rebuilt = _rebuild(turns, session_id=session_id, current=current, tuned=tuned, res=res)
        after = _apply_rebuild(session_id, rebuilt, token=token, version=version,
                               tuned=tuned, job=job, turns=turns)
    except BaseException:
        # The call failed, or the apply did and wrote nothing: the lease goes now,
        # so the session's next job is not held off until it expires.
        with transaction() as s:
            release(session_id, db=s, token=token)
        raise
    if after is None:
        raise Superseded(f"session {session_id!r} changed during resummarize; try again")
    result = rebuilt.result
    return log_outcome(Outcome(session_id, "applied", rebuilt.reason,
                               summary_tokens=rebuilt.summary_tokens,
                               summary_version=version + 1, model=result.model,
                               more_work=after.should_summarize,
                               input_tokens=result.input_tokens,
                               output_tokens=result.output_tokens,
                               latency_ms=rebuilt.latency_ms), job)


def _claim_archive(session_id: str, *, token: str, lease_s: int
                   ) -> tuple[str | None, int, Any, list[Turn]]:
    """One transaction: the session's summary, version and overrides, the lease, and
    every archived message in full (as a job reads a batch)."""
    with transaction() as s:
        now = db_now(s)  # one clock for every worker's lease
        row = s.execute(select(ChatSession.summarized_message_count, ChatSession.overrides,
                               ChatSession.summary_version, ChatSession.rolling_summary)
                        .where(ChatSession.id == session_id)).one_or_none()
        if row is None:
            raise SessionNotFound(f"no chat session with id {session_id!r}")
        condensed, overrides, version, current = row
        # A cleared tool result's original is archived while its stub is still in
        # the window: only what left the window is rebuilt from.
        condensed_only = (ArchivedMessage.session_id == session_id,
                          ~exists().where(MESSAGES.c.id == ArchivedMessage.id))
        archived = s.scalar(select(func.count()).select_from(ArchivedMessage)
                            .where(*condensed_only)) or 0
        if archived == 0 or archived != condensed:
            raise InvalidInput(
                f"session {session_id!r} has {archived} archived of {condensed} condensed "
                "messages; resummarize needs all of them (RECAP_ARCHIVE_SUMMARIZED=true "
                "from the session's first summary)")
        taken = s.execute(take_lease(session_id, token=token, now=now,
                                     expires=lease_expiry(now, lease_s)))
        if rowcount(taken) != 1:
            raise SessionBusy(f"session {session_id!r} is being summarized; try again")
        turns = [Turn(i, role, content) for i, role, content in s.execute(
            select(ArchivedMessage.id, ArchivedMessage.role,
                   func.coalesce(ArchivedMessage.search_text, ArchivedMessage.content))
            .where(*condensed_only)
            .order_by(ArchivedMessage.id))]
    return current, version, overrides, turns


def _rebuild(turns: list[Turn], *, session_id: str, current: str | None, tuned: Settings,
             res: Resources) -> _Rebuilt:
    """The model call, no transaction open, then the guard when it is on."""
    summarizer = res.summarizer_for(tuned, session_id=session_id)
    # Sent as a job sends them: pasted blocks above the cap as excerpts.
    sent, excerpted = excerpt_turns(turns, max_tokens=tuned.bulk_excerpt_tokens(),
                                    count=count_tokens)
    started = time.monotonic()
    result = summarizer.summarize(None, sent)
    # The answer replaces a summary that kept every specific: through the guard.
    settled, counts = guard_rebuild(
        result.text, turns=turns, current=current, count=count_tokens,
        details_cap=int(tuned.details_share * tuned.max_summary_tokens),
        corpus=echo.sent_corpus(sent_texts(summarizer))) if tuned.retention_guard \
        else (None, None)
    latency_ms = int((time.monotonic() - started) * 1000)
    reason = f"resummarized from {len(turns)} archived messages" + (
        f"; {excerpted}" if excerpted else "")
    text = settled.summary if settled else result.text
    return _Rebuilt(text, count_tokens(text), result, settled, counts, reason, latency_ms)


def _apply_rebuild(session_id: str, rebuilt: _Rebuilt, *, token: str, version: int,
                   tuned: Settings, job: Job, turns: list[Turn]) -> policy.Plan | None:
    """The fenced write of a rebuild, its run and version (one transaction); the plan
    on what stays, or None (lease released) when a job applied meanwhile."""
    with transaction() as s:
        # The new summary's size changes what the remaining messages need: plan on
        # them, as an apply does.
        after = policy.plan(message_infos(session_id, db=s),
                            summary_tokens=rebuilt.summary_tokens, t=tuned.thresholds())
        written = write_summary(session_id, db=s, token=token, version=version,
                                summary=rebuilt.text, summary_tokens=rebuilt.summary_tokens,
                                condensed=(), condensed_tokens=0, after=after, settings=tuned,
                                now=db_now(s))
        if written is None:  # released with this commit
            release(session_id, db=s, token=token)
            return None
        # An applied run that condenses nothing: it bumps the version, and the
        # archived messages stay covered by the runs that condensed them.
        result = rebuilt.result
        run_id = record_run(RunRecord(
            session_id=session_id, task_id=job.task_id, attempt=job.attempt,
            status="applied", reason=rebuilt.reason, messages_condensed=0,
            input_tokens=result.input_tokens, output_tokens=result.output_tokens,
            summary_tokens=rebuilt.summary_tokens, latency_ms=rebuilt.latency_ms,
            model=result.model, guard=rebuilt.counts), db=s)
        if rebuilt.settled and rebuilt.settled.memories:  # what the details could not hold
            save_memories(session_id, rebuilt.settled.memories, db=s, first_id=turns[0].id,
                          last_id=turns[-1].id, run_id=run_id)
        save_summary_version(session_id, db=s, version=version + 1, text=rebuilt.text,
                             tokens=rebuilt.summary_tokens, covers_through=turns[-1].id,
                             run_id=run_id, keep=tuned.summary_versions_keep)
    return after
