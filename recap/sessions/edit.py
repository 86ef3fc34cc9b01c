"""``edit_message``: change an active message in place, under the session's lease
(recap.sessions.lock): blocks and token counts follow, the session's counters
stay exact. A summarized message cannot change in place: the error says how to
rewind to it instead (recap.sessions.rewind). A tool result Recap cleared to a
stub keeps its archived original when the edit keeps the stub as it reads; an
edit that would lose the original, or forge a stub, is refused
(recap.sessions.cleared). Emits one ``edit`` log event.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from recap.core.content.message import Message, prepare_content
from recap.core.content.render import full_text
from recap.core.validate import MAX_ROW_ID, check_session_id, check_whole
from recap.db import db_now, transaction
from recap.errors import InvalidInput
from recap.llm.tokens import message_tokens
from recap.models import ArchivedMessage
from recap.models import messages_table as MESSAGES
from recap.models import sessions_table as SESSIONS
from recap.sessions.cleared import reconcile
from recap.sessions.lock import WAIT_S, exists, live_runs, locked, retrying
from recap.settings import Settings, get_settings

log = logging.getLogger("recap.worker.jobs")


@dataclass(frozen=True)
class Edited:
    session_id: str
    message_id: int
    token_count: int


def edit_message(session_id: str, message_id: int, content: object, *,
                 wait_s: float = WAIT_S) -> Edited:
    """Replace an active message's content (string or content array): blocks and
    token counts follow, the session's counters stay exact.

    Raises SessionNotFound; InvalidInput for bad content or a message that is not
    active (a summarized one cannot change in place: the error says how to
    rewind); EditDropsOriginal and ForgedStub (InvalidInput's, see
    recap.sessions.cleared) for an edit that would lose a cleared tool result's
    archived original or write a stub Recap did not;
    SessionBusy as :func:`rewind`. Nothing changes then.
    """
    check_session_id(session_id)
    check_whole(message_id, "message_id", low=1, high=MAX_ROW_ID)
    settings = get_settings()
    done: Edited = retrying(session_id, wait_s,
                             lambda: _edit(session_id, message_id, content, settings))
    log.info(json.dumps({"event": "edit", **asdict(done)}))
    return done


def _edit(session_id: str, message_id: int, content: object, settings: Settings) -> Edited:
    with transaction() as s:
        locked(session_id, db=s, now=db_now(s))
        row = s.execute(select(MESSAGES.c.role, MESSAGES.c.token_count, MESSAGES.c.blocks)
                        .where(MESSAGES.c.session_id == session_id,
                               MESSAGES.c.id == message_id)).one_or_none()
        if row is None:
            raise InvalidInput(_not_active(session_id, message_id, settings, db=s))
        msg = prepare_content(row.role, content,
                              max_inline_chars=settings.max_inline_base64_chars)
        _keep_originals(session_id, message_id, row.role, row.blocks, msg, db=s,
                        settings=settings)
        tokens = message_tokens(msg)
        s.execute(update(MESSAGES).where(MESSAGES.c.id == message_id).values(
            content=msg.content, blocks=msg.blocks, tool_links=msg.tool_links,
            token_count=tokens))
        s.execute(update(SESSIONS).where(SESSIONS.c.id == session_id).values(
            active_tokens=SESSIONS.c.active_tokens + tokens - row.token_count))
        return Edited(session_id, message_id, tokens)


def _keep_originals(session_id: str, message_id: int, role: str, stored: Any, msg: Message,
                    *, db: Session, settings: Settings) -> None:
    """Rewrite the message's archived copy, if it has one (a tool result cleared to a
    stub), to the edited message with each kept stub's original in its place, so
    recall quotes the edit and the originals and a later fold keeps them; drop the
    copy when no stub is kept (the window then holds the whole message). Raises as
    recap.sessions.cleared.reconcile, before anything is written."""
    where = (ArchivedMessage.session_id == session_id, ArchivedMessage.id == message_id)
    archived = db.scalar(select(ArchivedMessage.blocks).where(*where))
    merged = reconcile(message_id, stored=stored, edited=msg.blocks, archived=archived)
    if merged is None:
        db.execute(delete(ArchivedMessage).where(*where))
        return
    whole = prepare_content(role, merged, max_inline_chars=settings.max_inline_base64_chars)
    db.execute(update(ArchivedMessage).where(*where).values(
        content=whole.content, blocks=whole.blocks, tool_links=whole.tool_links,
        token_count=message_tokens(whole), search_text=full_text(merged)))


def _not_active(session_id: str, message_id: int, settings: Settings, *, db: Session) -> str:
    covers = max((r.last_message_id for r in live_runs(session_id, db=db)), default=0)
    if not (exists(session_id, message_id, db=db) or 0 < message_id <= covers):
        return f"message {message_id} is not a message of session {session_id!r}"
    before = max((db.scalar(select(func.max(t.id)).where(t.session_id == session_id,
                                                         t.id < message_id)) or 0
                  for t in (ArchivedMessage, MESSAGES.c)), default=0)
    if settings.archive_summarized and exists(session_id, message_id, db=db):
        return (f"message {message_id} is summarized, so it cannot change in place; to edit it, "
                f"rewind(session_id, {before}) and add the edited message (the summary goes "
                "back to the version before it, from the archive)")
    return (f"message {message_id} is summarized and its text was not kept "
            "(RECAP_ARCHIVE_SUMMARIZED was off when it was condensed), so it can neither change "
            "in place nor be restored by a rewind")
