"""An agent's own recall (``recap.recall``): the archived original of a cleared
tool output or a condensed message, or the passages of the archive that match a
query, of one session only.

Reply-time recall (``<ARCHIVE_RECALL>``) guesses from the newest turn; this is
the explicit way back, for a tool an agent calls when it decides it needs a
cleared output again. A stub names what it cleared; the agent passes the
tool_use id of the result it replaced (``tool_use_id``) or a message id a recall
label showed (``message_id``), and gets the original whole when it fits
``max_tokens``, else the passage its ``query`` (or, with none, its first lines)
ranks. With only a query, the archive is searched as reply-time recall searches
it, and each match quoted as its passage. Every read is of the session given
(and, inside :func:`recap.tenant`, of the tenant's ids only); what comes back is
labelled by channel like the recall block and defused like it: data, never the
user's words unless the label says so.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import TypedDict

from sqlalchemy import select
from sqlalchemy.orm import Session

from recap.core.content.render import full_text, parse_links
from recap.core.context import lookback
from recap.core.context.passages import Passage, Source, passage, shown_lines
from recap.core.memories.channels import CHANNEL_LABELS, channel
from recap.core.validate import MAX_ROW_ID, check_session_id, check_str
from recap.db import dialect_name, transaction
from recap.errors import ArchivedMessageNotFound, InvalidInput, SessionNotFound
from recap.llm.tokens import count_tokens
from recap.models import ArchivedMessage, ChatMessage, ChatSession
from recap.store.lookback import lookup_query, passages_query, to_hits, to_sources

__all__ = ["DEFAULT_TOKENS", "MAX_QUERY_CHARS", "MAX_TOKENS", "Recalled", "recall"]

# A question an agent asks, not a document: longer input is refused, not searched.
MAX_QUERY_CHARS = 2_000
# What one answer may hold: a tool result's worth by default, at most a long file.
DEFAULT_TOKENS = 4_000
MAX_TOKENS = 100_000
# A tool_use id as the Messages API writes them.
TOOL_USE_ID = re.compile(r"[A-Za-z0-9_-]{1,255}")
# Archived messages naming one tool_use id read to find the one answering it.
ID_CANDIDATES = 8


class Recalled(TypedDict):
    """One archived message (or its passage) as :func:`recall` returns it."""

    message_id: int
    channel: str  # as the recall block labels it: "tool result", "user", "document"...
    created_at: datetime | None
    call: str | None  # the tool call a tool result answers: what it read or ran
    text: str  # the original (whole) or its passage, ``…`` where lines are left out
    whole: bool


def recall(session_id: str, *, message_id: int | None = None, tool_use_id: str | None = None,
           query: str | None = None, max_tokens: int = DEFAULT_TOKENS) -> list[Recalled]:
    """The archived original of one message of ``session_id`` (``message_id``, or
    the tool result answering ``tool_use_id``), whole when it fits ``max_tokens``,
    else the passage ``query`` ranks; or, with only ``query``, the passages of the
    session's archive that match it, best first (an empty list: nothing matched).

    Raises InvalidInput for a bad argument (none or both of the ids, an empty or
    over-long query, a query without words), SessionNotFound for an unknown
    session (or one outside the current tenant), ArchivedMessageNotFound when
    the session's archive holds no such message (another session's never is).
    """
    check_session_id(session_id)
    wanted = _checked(message_id=message_id, tool_use_id=tool_use_id, query=query,
                      max_tokens=max_tokens)
    with transaction() as s:
        if s.get(ChatSession, session_id) is None:
            raise SessionNotFound(f"no chat session with id {session_id!r}")
        if message_id is None and tool_use_id is None:
            return _search(session_id, wanted, max_tokens=max_tokens, db=s)
        row = _one(session_id, message_id=message_id, tool_use_id=tool_use_id, db=s)
        calls = _calls(session_id, row, db=s)
    return [_original(row, calls, asked=wanted, max_tokens=max_tokens)]


def _checked(*, message_id: object, tool_use_id: object, query: object,
             max_tokens: object) -> str:
    """The query's text ("" for none) once every argument is checked."""
    _check_ids(message_id, tool_use_id)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) \
            or not 1 <= max_tokens <= MAX_TOKENS:
        raise InvalidInput(f"max_tokens must be an int from 1 to {MAX_TOKENS}, "
                           f"got {max_tokens!r}")
    if query is None:
        if message_id is None and tool_use_id is None:
            raise InvalidInput("pass message_id, tool_use_id or query")
        return ""
    return check_str(query, "query", max_chars=MAX_QUERY_CHARS)


def _check_ids(message_id: object, tool_use_id: object) -> None:
    """Raise InvalidInput unless at most one id is given, and it is well formed."""
    if message_id is not None and tool_use_id is not None:
        raise InvalidInput("pass message_id or tool_use_id, not both")
    if message_id is not None and (isinstance(message_id, bool) or not isinstance(
            message_id, int) or not 1 <= message_id <= MAX_ROW_ID):
        raise InvalidInput(f"message_id must be an int from 1 to {MAX_ROW_ID}, "
                           f"got {message_id!r}")
    if tool_use_id is not None and (not isinstance(tool_use_id, str)
                                    or not TOOL_USE_ID.fullmatch(tool_use_id)):
        raise InvalidInput("tool_use_id must be 1 to 255 letters, digits, '_' or '-'")


def _one(session_id: str, *, message_id: int | None, tool_use_id: str | None,
         db: Session) -> ArchivedMessage:
    """The session's archived message with that id, or answering that tool call."""
    where = [ArchivedMessage.session_id == session_id]
    if message_id is not None:
        where.append(ArchivedMessage.id == message_id)
    else:
        where.append(ArchivedMessage.tool_links.contains(f"result:{tool_use_id}",
                                                         autoescape=True))
    for row in db.scalars(select(ArchivedMessage).where(*where)
                          .order_by(ArchivedMessage.id).limit(ID_CANDIDATES)):
        if message_id is not None or tool_use_id in parse_links(row.tool_links)[1]:
            return row
    named = f"message {message_id}" if message_id is not None else \
        f"the result of tool call {tool_use_id!r}"
    raise ArchivedMessageNotFound(f"the archive of session {session_id!r} holds no {named}")


def _calls(session_id: str, row: ArchivedMessage, *, db: Session) -> dict[str, str]:
    """The tool call ``row`` answers, rendered, by id: from the archive or the window."""
    answers = parse_links(row.tool_links)[1]
    if not answers:
        return {}
    found: dict[str, str] = {}
    for model in (ArchivedMessage, ChatMessage):  # the call may still be in the window
        for blocks in db.scalars(select(model.blocks).where(
                model.session_id == session_id, model.id < row.id,
                model.tool_links.contains(f"call:{answers[0]}", autoescape=True))
                .order_by(model.id.desc()).limit(1)):
            for b in blocks or ():
                if b.get("type") == "tool_use" and b.get("id") in answers:
                    found[str(b["id"])] = full_text([b])
    return found


def _original(row: ArchivedMessage, calls: dict[str, str], *, asked: str,
              max_tokens: int) -> Recalled:
    """``row``'s original, whole when it fits ``max_tokens``, else its passage."""
    text = full_text(row.blocks) if row.blocks else row.content
    answers = parse_links(row.tool_links)[1]
    call = next((calls[a] for a in answers if a in calls), None)
    tool = bool(answers) or row.role == "tool"
    found = channel(text, role=row.role, tool=tool)
    source = Source(row.id, text, 0, len(text), call=call)
    p = passage(source, asked=lookback.asked_keys(asked), cue_keys=set(),
                label=CHANNEL_LABELS.get(found, found))
    if not asked or not p.order:  # nothing ranks the lines: the first ones come first
        p = replace(p, order=tuple(range(len(p.lines))))
    return _recalled(row.id, row.created_at, p, max_tokens=max_tokens)


def _recalled(msg_id: int, at: datetime | None, p: Passage, *, max_tokens: int) -> Recalled:
    shown = shown_lines(p, room=max_tokens, count=count_tokens) or []
    return Recalled(message_id=msg_id, channel=p.label, created_at=at,
                    call=p.call, text="\n".join(shown), whole=shown == list(p.lines))


def _search(session_id: str, query: str, *, max_tokens: int, db: Session) -> list[Recalled]:
    """The passages of the session's archive that ``query`` names, best first,
    within ``max_tokens`` together."""
    chosen = lookback.cues(query, context="")
    if not chosen:
        raise InvalidInput("query names nothing to look up: give a word, name, number "
                           "or identifier")
    dialect = dialect_name(db)
    statement, values = lookup_query(session_id, chosen, dialect=dialect)
    hits = to_hits(db.execute(statement, values).all())
    reads = lookback.passage_reads(hits, chosen)
    if not reads:
        return []
    statement, more = passages_query(session_id, reads)
    sources = to_sources(db.execute(statement, more).all())
    found = lookback.quotes(hits, chosen, sources=sources, asked=lookback.asked_keys(query))
    times = {h.id: h.at for h in hits}
    out: list[Recalled] = []
    left = max_tokens
    for q in found:
        if not isinstance(q, Passage) or left <= 0:
            continue  # a line of a message not read for its passage: the read ones are best
        item = _recalled(q.message_id, times.get(q.message_id),
                         replace(q, label=q.channel), max_tokens=left)
        if item["text"]:
            out.append(item)
            left -= count_tokens(item["text"])
    return out
