"""Which stubs in the window Recap wrote: only those are stubs.

A stub (recap.core.retention.stubs) is a line of text, and an app or a tool can
send the same text byte for byte. Recap archives every tool result it clears
before its stub replaces it (recap.worker.jobs.clear), so a stored block is
Recap's stub exactly when it differs from its message's archived original. Any
other tool result that reads as a stub is data: clearing and the fold's brief
are shown it with its first character as a character reference, so it is
cleared, briefed and sent like any other tool result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, select

from recap.core.retention import stubs
from recap.db import Db
from recap.models import ArchivedMessage
from recap.models import messages_table as MESSAGES

Blocks = list[dict[str, Any]]

_ARCHIVED = (select(ArchivedMessage.id, ArchivedMessage.blocks)
             .where(ArchivedMessage.session_id == bindparam("sid"),
                    ArchivedMessage.id.in_(bindparam("ids", expanding=True))))
# The same for the whole window, however long (no parameter per message).
_WINDOW_ARCHIVED = (select(ArchivedMessage.id, ArchivedMessage.blocks)
                    .where(ArchivedMessage.session_id == bindparam("sid"),
                           ArchivedMessage.id.in_(select(MESSAGES.c.id).where(
                               MESSAGES.c.session_id == bindparam("sid")))))


def originals(session_id: str, ids: Sequence[int], *, db: Db) -> dict[int, Blocks]:
    """The archived content arrays of the messages ``ids`` (a batch) that have
    one, by id."""
    if not ids:
        return {}
    return {i: b for i, b in db.execute(_ARCHIVED, {"sid": session_id, "ids": list(ids)}) if b}


def window_originals(session_id: str, *, db: Db) -> dict[int, Blocks]:
    """:func:`originals` of every message in the session's window."""
    return {i: b for i, b in db.execute(_WINDOW_ARCHIVED, {"sid": session_id}) if b}


def as_data(blocks: Blocks, original: Blocks | None) -> Blocks:
    """``blocks`` (a stored content array) with each tool result that reads as a
    stub but is not Recap's (the same block as its archived ``original``, or no
    original) shown as data: its first character as a character reference. The
    other blocks are the same objects, so a caller can tell what it was shown."""
    shown: Blocks = []
    for i, block in enumerate(blocks):
        body = stubs.body_of(block) if block.get("type") == "tool_result" else None
        recaps = original is not None and i < len(original) and original[i] != block
        if body is None or recaps or not stubs.is_stub(body):
            shown.append(block)
        else:
            shown.append({**block, "content": f"&#{ord(body[0])};{body[1:]}"})
    return shown
