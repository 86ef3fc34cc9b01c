"""Title jobs: after the first exchange, give the session a 3-7 word title.

The service function (``title_session``) owns its transactions and never holds
one open across the call. A title is written only while ``chat_sessions.title``
is NULL, so a title the app set meanwhile always wins.
``chat_sessions.title_requested_at`` coalesces title jobs like ``enqueued_at``
does summarize jobs. Every call is recorded in ``title_runs`` (its API usage, or
its error), for ``recap stats`` and ``recap failures``.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session

from recap import tracing
from recap.core.prompts.titles import MESSAGE_MAX_TOKENS
from recap.db import transaction
from recap.llm.client import classify
from recap.llm.titler import generate_title
from recap.models import ChatMessage, ChatSession, TitleRun
from recap.settings import Settings
from recap.store.enqueue import due_for_title, mark_title_requested, send_title, stale_before
from recap.store.rows import session_exists
from recap.worker.jobs.outcome import describe_error
from recap.worker.jobs.resources import Resources

log = logging.getLogger("recap.titles")

# A token is rarely more than ~8 characters: read no more than this from the row.
_MESSAGE_MAX_CHARS = 8 * MESSAGE_MAX_TOKENS


def sweep_titles(settings: Settings, *, now: datetime, limit: int) -> int:
    """Queue title jobs for up to ``limit`` untitled sessions nobody is titling; how many."""
    if not settings.titles_enabled:
        return 0
    stale = stale_before(now, settings)
    with transaction() as s:
        # Never-requested first, then the longest-waiting (a permanently failing
        # session cannot starve the rest).
        ids = list(s.scalars(select(ChatSession.id).where(due_for_title(stale))
                             .order_by(ChatSession.title_requested_at.asc().nulls_first())
                             .limit(limit)))
        marked = [sid for sid in ids
                  if mark_title_requested(sid, db=s, now=now, stale_before=stale)]
    return sum(1 for sid in marked if send_title(sid))


class Exchange(NamedTuple):
    """What a title is made from: the session's title and its first exchange."""

    exists: bool
    title: str | None
    first_user: str | None
    first_reply: str | None  # the first assistant reply after the first user message


def _read_exchange(s: Session, session_id: str) -> Exchange:
    title = s.execute(select(ChatSession.title).where(ChatSession.id == session_id)).first()
    if title is None:
        return Exchange(False, None, None, None)
    base = select(ChatMessage.id, func.substr(ChatMessage.content, 1, _MESSAGE_MAX_CHARS)) \
        .where(ChatMessage.session_id == session_id).order_by(ChatMessage.id).limit(1)
    user = s.execute(base.where(ChatMessage.role == "user")).first()
    # The reply to the user, not an app greeting that may come before it.
    reply = (s.execute(base.where(ChatMessage.role == "assistant",
                                  ChatMessage.id > user[0])).first() if user else None)
    return Exchange(True, title[0], user[1] if user else None, reply[1] if reply else None)


def _log(session_id: str, status: str, **fields: object) -> None:
    level = logging.WARNING if status == "failed" else logging.INFO
    log.log(level, json.dumps({"event": "title", "session_id": session_id, "status": status,
                               **fields}, default=str, ensure_ascii=False))


def _record(session_id: str, status: str, *, model: str | None,
            input_tokens: int | None = None, output_tokens: int | None = None,
            error: str | None = None) -> None:
    """One title_runs row, unless the session was forgotten meanwhile; never raises
    (a lost audit row must not fail the title)."""
    try:
        with transaction() as s:
            if session_exists(session_id, db=s):
                s.execute(insert(TitleRun).values(
                    session_id=session_id, status=status, model=model,
                    input_tokens=input_tokens, output_tokens=output_tokens, error=error))
    except Exception as exc:
        log.warning("could not record the title run of session %r (%s: %s)", session_id,
                    type(exc).__name__, exc)


def title_session(session_id: str, *, res: Resources) -> str | None:
    """Give ``session_id`` a title if it has none; returns the session's title.

    None without calling Claude when the session is gone or has no user/assistant
    exchange yet. An existing title is returned untouched and never overwritten.
    On failure logs one line and raises the classified error; the title stays NULL.
    """
    with tracing.span("recap.title_session", session_id=session_id):
        return _title_session(session_id, res=res)


def _title_session(session_id: str, *, res: Resources) -> str | None:
    with transaction() as s:
        exists, title, first_user, first_reply = _read_exchange(s, session_id)
    if not exists or title is not None:
        return title
    if first_user is None or first_reply is None:
        _log(session_id, "waiting", reason="no user/assistant exchange yet")
        return None
    try:
        result = generate_title(res.client, first_user, first_reply,
                                offline_model=res.summarizer.model)
    except Exception as exc:
        mapped = classify(exc) or exc
        error = describe_error(exc, secret=res.secret)
        _log(session_id, "failed", error_class=type(mapped).__name__, error=error)
        _record(session_id, "failed", model=res.summarizer.model if res.client is None
                else res.client.model, error=error)
        if mapped is not exc:
            raise mapped from exc
        raise
    with transaction() as s:
        stored = s.execute(update(ChatSession)
                           .where(ChatSession.id == session_id, ChatSession.title.is_(None))
                           .values(title=result.title)
                           .returning(ChatSession.title)).scalar_one_or_none()
        if stored is None:  # set meanwhile (by the app) or the session is gone
            stored = s.scalar(select(ChatSession.title).where(ChatSession.id == session_id))
    _log(session_id, "stored" if stored == result.title else "kept", model=result.model,
         input_tokens=result.input_tokens, output_tokens=result.output_tokens)
    _record(session_id, "titled" if stored == result.title else "kept", model=result.model,
            input_tokens=result.input_tokens, output_tokens=result.output_tokens)
    return stored
