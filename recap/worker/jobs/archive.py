"""Rebuild a session's summary from its archive (RECAP_ARCHIVE_SUMMARIZED=true).

For deployments that keep history and want to re-summarize with a better prompt
or model: the archived messages are folded from scratch, in chunks, and the new
summary replaces the old one under the same lease and version fence as a job.
"""

from __future__ import annotations

import time
import uuid

from sqlalchemy import func, select

from recap.core import echo, policy
from recap.core.bulk import excerpt_turns
from recap.core.prompt import Turn
from recap.core.rebuild import guard_rebuild
from recap.db import db_now, rowcount, transaction
from recap.errors import InvalidInput, SessionBusy, SessionNotFound, Superseded
from recap.llm.summarizer import sent_texts
from recap.llm.tokens import count_tokens
from recap.models import ArchivedMessage, ChatSession
from recap.settings import effective
from recap.store.fence import lease_expiry, release, take_lease
from recap.store.rows import record_run, save_memories, save_summary_version
from recap.worker.jobs.claim import message_infos
from recap.worker.jobs.outcome import Job, Outcome, log_outcome
from recap.worker.jobs.resources import Resources
from recap.worker.jobs.write import write_summary


def resummarize(session_id: str, *, res: Resources, job: Job | None = None) -> Outcome:
    """Replace the rolling summary with one rebuilt from every archived message,
    through the retention guard (recap.core.rebuild) when it is on: what the
    current summary keeps, and the archive's specifics, stay kept.

    Raises SessionNotFound; InvalidInput when the archive does not hold every
    condensed message (some were deleted before archiving was on); SessionBusy
    when a job holds the session; Superseded when a job applied meanwhile. The
    summarizer's errors propagate with nothing changed.
    """
    settings = res.settings
    job = job or Job(task_id=f"resummarize-{uuid.uuid4()}")
    token = str(uuid.uuid4())
    with transaction() as s:
        now = db_now(s)  # one clock for every worker's lease
        row = s.execute(select(ChatSession.summarized_message_count, ChatSession.overrides,
                               ChatSession.summary_version, ChatSession.rolling_summary)
                        .where(ChatSession.id == session_id)).one_or_none()
        if row is None:
            raise SessionNotFound(f"no chat session with id {session_id!r}")
        condensed, overrides, version, current = row
        archived = s.scalar(select(func.count()).select_from(ArchivedMessage)
                            .where(ArchivedMessage.session_id == session_id)) or 0
        if archived == 0 or archived != condensed:
            raise InvalidInput(
                f"session {session_id!r} has {archived} archived of {condensed} condensed "
                "messages; resummarize needs all of them (RECAP_ARCHIVE_SUMMARIZED=true "
                "from the session's first summary)")
        taken = s.execute(take_lease(session_id, token=token, now=now,
                                     expires=lease_expiry(now, settings.lease_s)))
        if rowcount(taken) != 1:
            raise SessionBusy(f"session {session_id!r} is being summarized; try again")
        # Read in full (a block message's whole rendering), as a job reads a batch.
        turns = [Turn(i, role, content) for i, role, content in s.execute(
            select(ArchivedMessage.id, ArchivedMessage.role,
                   func.coalesce(ArchivedMessage.search_text, ArchivedMessage.content))
            .where(ArchivedMessage.session_id == session_id)
            .order_by(ArchivedMessage.id))]
    tuned = effective(settings, overrides)
    summarizer = res.summarizer_for(tuned)
    # Sent as a job sends them: pasted blocks above the cap as excerpts.
    sent, excerpted = excerpt_turns(turns, max_tokens=tuned.bulk_excerpt_tokens(),
                                    count=count_tokens)
    started = time.monotonic()
    try:
        result = summarizer.summarize(None, sent)
        # The answer replaces a summary that kept every specific: through the guard.
        settled, counts = guard_rebuild(
            result.text, turns=turns, current=current, count=count_tokens,
            details_cap=int(tuned.details_share * tuned.max_summary_tokens),
            corpus=echo.sent_corpus(sent_texts(summarizer))) if tuned.retention_guard \
            else (None, None)
    except BaseException:
        with transaction() as s:
            release(session_id, db=s, token=token)
        raise
    latency_ms = int((time.monotonic() - started) * 1000)
    reason = f"resummarized from {len(turns)} archived messages" + (
        f"; {excerpted}" if excerpted else "")
    text = settled.summary if settled else result.text
    summary_tokens = count_tokens(text)
    with transaction() as s:
        # The new summary's size changes what the remaining messages need: plan on
        # them, as an apply does.
        after = policy.plan(message_infos(session_id, db=s), summary_tokens=summary_tokens,
                            t=tuned.thresholds())
        written = write_summary(session_id, db=s, token=token, version=version,
                                summary=text, summary_tokens=summary_tokens,
                                condensed=(), condensed_tokens=0, after=after, settings=tuned,
                                now=db_now(s))
        applied = written is not None
        if not applied:  # released with this commit; raised after it (a raise rolls back)
            release(session_id, db=s, token=token)
        else:
            # An applied run that condenses nothing: it bumps the version, and the
            # archived messages stay covered by the runs that condensed them.
            run_id = record_run(session_id, db=s, task_id=job.task_id, attempt=job.attempt,
                                status="applied", reason=reason, messages_condensed=0,
                                input_tokens=result.input_tokens,
                                output_tokens=result.output_tokens,
                                summary_tokens=summary_tokens, latency_ms=latency_ms,
                                model=result.model, guard=counts)
            if settled and settled.memories:  # what the details could not hold: the session's
                save_memories(session_id, settled.memories, db=s, first_id=turns[0].id,
                              last_id=turns[-1].id, run_id=run_id)
            save_summary_version(session_id, db=s, version=version + 1, text=text,
                                 tokens=summary_tokens, covers_through=turns[-1].id,
                                 run_id=run_id, keep=tuned.summary_versions_keep)
    if not applied:
        raise Superseded(f"session {session_id!r} changed during resummarize; try again")
    return log_outcome(Outcome(session_id, "applied", reason, summary_tokens=summary_tokens,
                               summary_version=version + 1, model=result.model,
                               more_work=after.should_summarize,
                               input_tokens=result.input_tokens,
                               output_tokens=result.output_tokens, latency_ms=latency_ms), job)
