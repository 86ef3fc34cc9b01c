"""Which stubs in the window Recap wrote: only those are stubs.

The job path's reads of the archived originals; the decision is pure
(recap.core.retention.own_stubs, shared with the reply path). Recap archives
every tool result it clears (recap.worker.jobs.clear) before its stub replaces
it. Any other tool result that reads as a stub is data: clearing and the fold's
brief are shown it with its first character as a character reference
(:func:`as_data`), so it is cleared, briefed and sent like any other tool result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, select

from recap.core.retention.own_stubs import as_data as as_data  # the decision, pure
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
