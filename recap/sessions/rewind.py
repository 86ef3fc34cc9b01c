"""Rewind a conversation, summarized history included.

``rewind(session_id, after_message_id)`` deletes every message after
``after_message_id`` (regenerate: rewind to the user turn, then add the new
reply; edit: rewind to the turn before, then add the edited one). A point inside
the summarized range needs the archive (RECAP_ARCHIVE_SUMMARIZED): the newest
kept summary version covering only messages up to the point is restored, the
archived messages between its coverage and the point move back into
chat_messages (original ids and order), the rest goes (from the archive too,
with the memories mined from the undone batches). ``edit_message``
(recap.sessions.edit) changes an active message in place.

Each call is one transaction under the session's lease (recap.sessions.lock):
it runs only while no job holds a live lease (it waits up to ``wait_s``, then
raises SessionBusy), and it clears an expired one, so a job whose lease ran out
finds its fence broken and changes nothing. Counters are recounted inside the
transaction. A rewind is recorded as an ``applied`` run that condenses nothing
(``rewound_after`` set) and bumps the summary version; the runs it undid get
``undone_by`` (the invariant, docs/RELIABILITY.md, knows both). Each emits one ``rewind`` log event.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import Session

from recap.core.validate import MAX_ROW_ID, check_session_id, check_whole
from recap.db import db_now, transaction, utcnow
from recap.errors import InvalidInput
from recap.models import ArchivedMessage, Memory, MemorySource, SummaryRun, SummaryVersion
from recap.models import messages_table as MESSAGES
from recap.models import sessions_table as SESSIONS
from recap.sessions.lock import WAIT_S, exists, live_runs, locked, retrying
from recap.settings import Settings, effective, get_settings
from recap.store.rows import save_summary_version
from recap.store.runs import RunRecord, record_run
from recap.store.sources import drop_sources, drop_unsourced

log = logging.getLogger("recap.worker.jobs")

_MESSAGE_COLS = ("id", "session_id", "role", "content", "token_count", "pinned",
                 "created_at", "blocks", "tool_links")


@dataclass(frozen=True)
class Rewound:
    """What one rewind did (also its log event)."""

    session_id: str
    after_message_id: int
    deleted: int  # messages removed (active and archived)
    restored: int  # archived messages moved back into the active window
    memories_deleted: int
    summary_version: int  # the session's version after the rewind
    restored_version: int | None  # the summary version restored (0: no summary), if any


def rewind(session_id: str, after_message_id: int, *, wait_s: float = WAIT_S) -> Rewound:
    """Delete every message after ``after_message_id`` (0: all of them), restoring
    summarized history from the archive when the point lies inside it.

    Raises SessionNotFound; InvalidInput for a point that is not a message of the
    session, or inside summarized history when it cannot be restored (archive
    off, or the archive lacks messages to restore); SessionBusy
    when a job held the lease for all of ``wait_s`` seconds. Nothing changes then.
    """
    check_session_id(session_id)
    check_whole(after_message_id, "after_message_id (a message id, or 0)", low=0,
                high=MAX_ROW_ID)
    settings = get_settings()
    done: Rewound = retrying(session_id, wait_s,
                              lambda: _rewind(session_id, after_message_id, settings))
    log.info(json.dumps({"event": "rewind", **asdict(done)}))
    return done


def _rewind(session_id: str, after: int, settings: Settings) -> Rewound:
    now = utcnow()
    with transaction() as s:
        head = locked(session_id, db=s, now=db_now(s))
        settings = effective(settings, head.overrides)
        live = live_runs(session_id, db=s)
        covers = max((r.last_message_id for r in live), default=0)
        summary, tokens, restored_version = head.rolling_summary, head.summary_tokens, None
        restored = memories = 0
        undone: list[Any] = []
        if after > covers and not exists(session_id, after, db=s):
            raise InvalidInput(f"message {after} is not a message of session {session_id!r}")
        if after < covers:
            point = _restore_point(session_id, after, live, settings, db=s)
            restored_version, summary, tokens, covers = point
            undone = [r for r in live if r.last_message_id > covers]
            restored = _unarchive(session_id, covers, after, undone, db=s)
            memories = _forget_undone_memories(session_id, covers, db=s)
        gone = [i for (i,) in s.execute(delete(MESSAGES).where(
            MESSAGES.c.session_id == session_id, MESSAGES.c.id > after)
            .returning(MESSAGES.c.id))]
        gone += [i for (i,) in s.execute(delete(ArchivedMessage).where(
            ArchivedMessage.session_id == session_id, ArchivedMessage.id > after)
            .returning(ArchivedMessage.id))]
        version = head.summary_version + 1
        run_id = record_run(RunRecord(
            session_id=session_id, task_id=f"rewind-{uuid.uuid4()}", attempt=1,
            status="applied", reason=_reason(after, len(gone), restored, restored_version),
            messages_condensed=0, last_message_id=max(gone, default=None),
            rewound_after=after, summary_tokens=tokens), db=s)
        if undone:
            s.execute(update(SummaryRun).where(SummaryRun.id.in_([r.id for r in undone]))
                      .values(undone_by=run_id))
        count, active = s.execute(select(func.count(), func.coalesce(func.sum(
            MESSAGES.c.token_count), 0)).where(MESSAGES.c.session_id == session_id)).one()
        s.execute(update(SESSIONS).where(SESSIONS.c.id == session_id).values(
            summary_version=version, rolling_summary=summary, summary_tokens=tokens,
            message_count=count, active_tokens=active, summary_updated_at=now,
            summarized_message_count=SESSIONS.c.summarized_message_count
            - sum(r.messages_condensed for r in undone),
            normal_blocked=False, normal_blocked_under=None))
        save_summary_version(session_id, db=s, version=version, text=summary, tokens=tokens,
                             covers_through=covers or None, run_id=run_id,
                             keep=settings.summary_versions_keep)
        return Rewound(session_id, after, len(gone), restored, memories, version,
                       restored_version)


class RestorePoint(NamedTuple):
    """The summary a rewind goes back to (version 0: no summary)."""

    version: int
    summary: str | None
    tokens: int
    covers_through: int


def _restore_point(session_id: str, after: int, live: list[Any], settings: Settings, *,
                   db: Session) -> RestorePoint:
    """The summary to go back to for ``after``."""
    if not settings.archive_summarized:
        raise InvalidInput(
            f"message {after} lies inside the summarized history of session {session_id!r} "
            f"(messages up to {max(r.last_message_id for r in live)} are condensed into the "
            "summary and deleted); rewinding there needs them back, and they are kept only "
            "with RECAP_ARCHIVE_SUMMARIZED=true. Rewind to a later message, or turn the "
            "archive on for new history")
    if after and not exists(session_id, after, db=db):
        raise InvalidInput(f"message {after} is not a message of session {session_id!r}")
    # The newest kept version covering only messages up to the point, never one
    # an earlier rewind made stale (its run undone, or a later rewind went back
    # below its coverage: its text holds messages deleted since); none (pruned, or
    # the point precedes the first summary): start from no summary, everything up
    # to the point comes back from the archive.
    undone = select(SummaryRun.id).where(SummaryRun.session_id == session_id,
                                         SummaryRun.undone_by.isnot(None))
    went_below = select(SummaryRun.id).where(
        SummaryRun.session_id == session_id,
        SummaryRun.rewound_after < SummaryVersion.covers_through,
        SummaryRun.id > func.coalesce(SummaryVersion.run_id, 0)).exists()
    found = db.execute(
        select(SummaryVersion.version, SummaryVersion.text, SummaryVersion.tokens,
               SummaryVersion.covers_through)
        .where(SummaryVersion.session_id == session_id,
               SummaryVersion.covers_through <= after, ~went_below,
               SummaryVersion.run_id.is_(None) | SummaryVersion.run_id.not_in(undone))
        .order_by(SummaryVersion.version.desc()).limit(1)).one_or_none()
    if found is None:
        return RestorePoint(0, None, 0, 0)
    return RestorePoint(found.version, found.text, found.tokens, int(found.covers_through))


def _forget_undone_memories(session_id: str, covers: int, *, db: Session) -> int:
    """Drop this session's sources of the memories mined from the undone batches
    (after ``covers``): a memory goes with its last source, and one it had
    superseded is live again (recap.store.sources)."""
    return (drop_sources((MemorySource.session_id == session_id)
                         & (MemorySource.last_message_id > covers), db=db)
            + drop_unsourced((Memory.session_id == session_id)
                             & (Memory.last_message_id > covers), db=db))


def _unarchive(session_id: str, covers: int, after: int, undone: list[Any], *,
               db: Session) -> int:
    """Move archived messages covers < id <= after back into chat_messages."""
    archived = db.scalar(select(func.count()).select_from(ArchivedMessage).where(
        ArchivedMessage.session_id == session_id,
        ArchivedMessage.run_id.in_([r.id for r in undone]))) or 0
    condensed = sum(r.messages_condensed for r in undone)
    if archived != condensed:
        raise InvalidInput(
            f"session {session_id!r}: only {archived} of the {condensed} messages to restore "
            "are archived (RECAP_ARCHIVE_SUMMARIZED was off when some were condensed)")
    # A cleared tool result still in the window keeps its original archived.
    cleared = list(db.scalars(select(MESSAGES.c.id).where(
        MESSAGES.c.session_id == session_id, MESSAGES.c.id > covers, MESSAGES.c.id <= after)))
    between = (ArchivedMessage.session_id == session_id, ArchivedMessage.id > covers,
               ArchivedMessage.id <= after, ArchivedMessage.id.notin_(cleared))
    source = select(*(getattr(ArchivedMessage, c) for c in _MESSAGE_COLS)).where(*between)
    db.execute(insert(MESSAGES).from_select(list(_MESSAGE_COLS), source))
    return _count(db.execute(delete(ArchivedMessage).where(*between)))


def _count(result: Any) -> int:
    return int(result.rowcount or 0)


def _reason(after: int, deleted: int, restored: int, version: int | None) -> str:
    text = f"rewind after message {after}: {deleted} messages deleted"
    if version is not None:
        text += f", summary version {version} restored with {restored} messages"
    return text


