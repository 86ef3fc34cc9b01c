"""Step 0 of a summarize job: clear old tool output from the window, with no model call.

With the archive on (RECAP_ARCHIVE_SUMMARIZED) and RECAP_CLEAR_TOOL_RESULTS, the
tool results that left the keep window and that nothing used become stubs
(recap.core.retention.stubs) when that pays against the prompt cache
(recap.core.planning.clearing). Three steps, as a fold's:

1. claim: the lease and the window, one transaction;
2. compute: the stubs (pure);
3. apply: one fenced transaction that copies the originals to the archive, rewrites
   those rows' content, blocks and token counts, moves the session's counters,
   records the run and releases the lease.

A crash before the apply changes nothing (the lease expires); the apply is all or
nothing, and an archived copy is never replaced (recap.store.rows.archive_messages),
so the archive keeps the original whatever runs later. A stub is never stubbed again;
only Recap writes stubs (recap.worker.jobs.own_stubs): a tool result that merely
reads as one is cleared like any other.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any, NamedTuple

from sqlalchemy import Interval, Update, bindparam, exists, func, select, update

from recap.core.content.message import Message
from recap.core.content.render import digest, full_text
from recap.core.planning import policy
from recap.core.planning.clearing import clearing_pays, replies_until_fold
from recap.core.retention import stubs
from recap.db import Db, core_transaction, db_now, on_server_clock
from recap.errors import InvalidInput
from recap.llm.tokens import count_tokens, message_tokens
from recap.models import messages_table as MESSAGES
from recap.models import sessions_table as SESSIONS
from recap.settings import Settings, effective
from recap.store.fence import holds, lease_expiry, take_lease
from recap.store.rows import archive_messages
from recap.store.runs import RunRecord, record_run
from recap.worker.jobs import own_stubs
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.own_stubs import as_data
from recap.worker.jobs.resources import Resources

log = logging.getLogger(__name__)


class Window(NamedTuple):
    """What the clear's claim read: the lease it holds and the window."""

    token: str
    version: int
    settings: Settings
    rows: tuple[stubs.Row, ...]
    tokens: tuple[int, ...]  # each row's stored token count
    # Each row's blocks as the archive holds them (Recap cleared some of its tool
    # results), by id: a block that differs from its archived original is Recap's stub.
    originals: dict[int, list[dict[str, Any]]]
    replies: int  # the session's messages so far, condensed ones too, halved
    summary_tokens: int


class Rewrite(NamedTuple):
    """One row's new content: its rendering, blocks and token count."""

    id: int
    content: str
    blocks: list[dict[str, Any]]
    tokens: int


def enabled(settings: Settings) -> bool:
    """Whether clearing is on: it needs the archive, which keeps what it removes."""
    return settings.archive_summarized and settings.clear_tool_results


def clear_tool_results(session_id: str, *, job: Job, res: Resources) -> str | None:
    """Clear what pays to clear of the session's window; the run's reason, or None
    when nothing was cleared (off, the lease held, nothing to clear or too little)."""
    if not enabled(res.settings):
        return None
    window = _claim(session_id, res=res)
    if window is None:
        return None
    try:
        rewrites, results, cleared = _compute(window)
        return _apply(session_id, window, rewrites, results=results, cleared=cleared,
                      job=job)
    except Exception:
        # Nothing was written (the apply is one transaction): the lease goes, so the
        # fold's claim right after, or the next job, is not held off until it expires.
        _let_go_after_failure(session_id, token=window.token)
        raise


def _let_go_after_failure(session_id: str, *, token: str) -> None:
    """Release the lease in a transaction of its own; when even that fails (the
    database is down) the lease expires."""
    try:
        with core_transaction() as s:
            let_go(session_id, db=s, token=token)
    except Exception:
        log.warning("session %s: the clearing's lease could not be released; it expires",
                    session_id, exc_info=True)


def _claim(session_id: str, *, res: Resources) -> Window | None:
    token = str(uuid.uuid4())
    with core_transaction() as s:
        # A window of plain text messages has no tool output to clear: the lease is
        # not taken (nothing is written) and the fold's claim follows at once.
        if on_server_clock(s, None):
            row = s.execute(_LEASE_ON_SERVER_CLOCK, {
                "l_sid": session_id, "l_token": token,
                "l_lease": timedelta(seconds=res.settings.lease_s)}).one_or_none()
        else:
            now = db_now(s)
            row = s.execute(_LEASE, {"l_sid": session_id, "l_token": token, "l_now": now,
                                     "l_expires": lease_expiry(now, res.settings.lease_s)}
                            ).one_or_none()
        if row is None:
            return None  # held, no such session or no block message: the claim says which
        try:
            tuned = effective(res.settings, row.overrides)
        except InvalidInput:
            tuned = None  # the job's own claim dead-letters it, naming the problem
        if tuned is None or not enabled(tuned):
            let_go(session_id, db=s, token=token)
            return None
        rows = s.execute(_WINDOW, {"sid": session_id}).all()
        originals = own_stubs.window_originals(session_id, db=s)
    return Window(token, row.summary_version, tuned,
                  tuple(stubs.Row(r.id, r.role, r.content, r.blocks, r.pinned) for r in rows),
                  tuple(r.token_count for r in rows), originals,
                  (row.message_count + row.summarized_message_count) // 2,
                  row.summary_tokens)


def _compute(window: Window) -> tuple[list[Rewrite], int, int]:
    """The rows to rewrite, the results cleared and their tokens; nothing when
    clearing would not pay (recap.core.planning.clearing)."""
    rows = window.rows
    texts = [full_text(r.blocks) if r.blocks else r.content for r in rows]
    keep = window.settings.thresholds().keep_recent
    shown = [replace(r, blocks=as_data(r.blocks, window.originals.get(r.id))) if r.blocks
             else r for r in rows]
    by_id = {r.id: (r, seen) for r, seen in zip(rows, shown, strict=True)}
    found = [_restored(c, *by_id[c.id])
             for c in stubs.clear(shown, keep=keep, texts=texts, count=count_tokens,
                                    tool=window.settings.recall_tool)]
    if not found:
        return [], 0, 0
    rewrites = []
    for c in found:
        d = digest(c.blocks)
        rewrites.append(Rewrite(c.id, d.text, c.blocks, message_tokens(
            Message(d.text, c.blocks, d.countable, d.media_tokens))))
    new = {r.id: r.tokens for r in rewrites}
    stored = dict(zip((r.id for r in rows), window.tokens, strict=True))
    freed = sum(stored[i] - n for i, n in new.items())
    first = next(i for i, r in enumerate(rows) if r.id in new)
    after = sum(new.get(r.id, t) for r, t in zip(rows[first:], window.tokens[first:],
                                                  strict=True))
    cleared = sum(c.tokens for c in found)
    # The next fold's mark, sized on the window as written (before clearing).
    t, sizing = policy.adapt(window.settings.thresholds(), message_count=len(rows),
                             active_tokens=sum(window.tokens),
                             summary_tokens=window.summary_tokens)
    until = replies_until_fold(window.summary_tokens + sum(window.tokens) - freed,
                               fold_at=t.fold_at if sizing else None,
                               growth=sizing.growth if sizing else 0)
    if not clearing_pays(cleared, after, replies=window.replies, until_fold=until,
                         prices=t.prices):
        return [], 0, 0
    return rewrites, sum(c.results for c in found), cleared


def _restored(cleared: stubs.Cleared, row: stubs.Row, shown: stubs.Row) -> stubs.Cleared:
    """``cleared`` (of ``shown``, what recap.worker.jobs.own_stubs.as_data shows
    of ``row``) with each block it left as shown written back as stored: only the
    stubs it wrote are new."""
    blocks = [old if new is seen else new for old, seen, new in zip(
        row.blocks or (), shown.blocks or (), cleared.blocks, strict=True)]
    return replace(cleared, blocks=blocks)


def _apply(session_id: str, window: Window, rewrites: Sequence[Rewrite], *, results: int,
           cleared: int, job: Job) -> str | None:
    """The fenced write (one transaction); the run's reason, or None when nothing
    was written (nothing to clear, or the fence no longer held)."""
    with core_transaction() as s:
        if not rewrites:
            let_go(session_id, db=s, token=window.token)
            return None
        ids = [r.id for r in rewrites]
        old = dict(s.execute(select(MESSAGES.c.id, MESSAGES.c.token_count).where(
            MESSAGES.c.session_id == session_id, MESSAGES.c.id.in_(ids))).all())
        if len(old) != len(ids):
            let_go(session_id, db=s, token=window.token)
            return None  # a rewind or an edit removed some meanwhile
        freed = sum(old[r.id] - r.tokens for r in rewrites)
        fenced = s.execute(update(SESSIONS).where(holds(session_id, window.token,
                                                        window.version))
                           .values(active_tokens=SESSIONS.c.active_tokens - freed,
                                   lease_token=None, lease_expires_at=None)
                           .returning(SESSIONS.c.id)).one_or_none()
        if fenced is None:
            return None  # the lease expired and another job took the session
        reason = (f"cleared {results} tool result{'s' if results != 1 else ''}, "
                  f"{cleared:,} tokens, to the archive (no model call)")
        run_id = record_run(RunRecord(
            session_id=session_id, task_id=job.task_id, attempt=job.attempt,
            status="skipped", reason=reason, first_message_id=ids[0],
            last_message_id=ids[-1]), db=s, row_locked=True)
        archive_messages(session_id, ids, db=s, run_id=run_id)  # the originals, first
        s.execute(_REWRITE, [{"r_id": r.id, "r_content": r.content, "r_blocks": r.blocks,
                              "r_tokens": r.tokens} for r in rewrites])
        return reason


def let_go(session_id: str, *, db: Db, token: str) -> None:
    """Drop the lease if ``token`` still holds it, and nothing else: the lost-lease
    count and the pending marker are the fold's claim's to judge, right after."""
    db.execute(update(SESSIONS).where(SESSIONS.c.id == session_id,
                                      SESSIONS.c.lease_token == token)
               .values(lease_token=None, lease_expires_at=None))


def _lease_update(clock: Any, expires: Any) -> Update:
    """The clear's lease UPDATE, taken only while the session holds a message with
    a content array (only those hold tool results). A lease left by a worker lost
    mid-job counts as lost here as in the fold's claim."""
    holds_blocks = exists().where(MESSAGES.c.session_id == bindparam("l_sid"),
                                  MESSAGES.c.blocks.isnot(None))
    return (take_lease(bindparam("l_sid"), token=bindparam("l_token"), now=clock,
                       expires=expires, count_lost=True)
            .where(holds_blocks)
            .returning(SESSIONS.c.summary_version, SESSIONS.c.overrides,
                       SESSIONS.c.message_count, SESSIONS.c.summarized_message_count,
                       SESSIONS.c.summary_tokens))


# Built once, with bound parameters (as the fold's claim's lease): building a
# statement and its cache key on every job costs more CPU than running it.
_LEASE = _lease_update(bindparam("l_now", type_=SESSIONS.c.lease_expires_at.type),
                       bindparam("l_expires"))
_LEASE_ON_SERVER_CLOCK = _lease_update(
    func.now(), func.now() + bindparam("l_lease", type_=Interval()))
_WINDOW = (select(MESSAGES.c.id, MESSAGES.c.role, MESSAGES.c.content, MESSAGES.c.blocks,
                  MESSAGES.c.pinned, MESSAGES.c.token_count)
           .where(MESSAGES.c.session_id == bindparam("sid")).order_by(MESSAGES.c.id))
_REWRITE = (update(MESSAGES).where(MESSAGES.c.id == bindparam("r_id"))
            .values(content=bindparam("r_content"),
                    blocks=bindparam("r_blocks", type_=MESSAGES.c.blocks.type),
                    token_count=bindparam("r_tokens")))
