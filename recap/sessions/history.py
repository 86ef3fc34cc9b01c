"""Summary versions: every summary an applied run produced (summary_versions),
for ``recap.summary_at`` and ``recap history``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from recap.core.validate import MAX_VERSION, check_session_id, check_whole
from recap.db import transaction
from recap.errors import InvalidInput, SessionNotFound
from recap.models import ChatSession, SummaryVersion

__all__ = ["Version", "history", "summary_at"]


@dataclass(frozen=True)
class Version:
    """One kept summary: ``covers_through`` is the newest message id it condenses."""

    version: int
    text: str
    tokens: int
    covers_through: int | None
    run_id: int | None
    created_at: datetime


def _version(v: SummaryVersion) -> Version:
    return Version(v.version, v.text, v.tokens, v.covers_through, v.run_id, v.created_at)


def history(session_id: str) -> list[Version]:
    """Every kept version of the session's summary, oldest first (retention:
    RECAP_SUMMARY_VERSIONS_KEEP). Raises SessionNotFound, InvalidInput."""
    check_session_id(session_id)
    with transaction() as s:
        if s.get(ChatSession, session_id) is None:
            raise SessionNotFound(f"no chat session with id {session_id!r}")
        return [_version(v) for v in s.scalars(
            select(SummaryVersion).where(SummaryVersion.session_id == session_id)
            .order_by(SummaryVersion.version))]


def summary_at(session_id: str, version: int) -> Version:
    """The session's summary as of ``version``. Raises SessionNotFound for an
    unknown session, InvalidInput for a version that does not exist or was not
    kept (RECAP_SUMMARY_VERSIONS_KEEP)."""
    check_session_id(session_id)
    check_whole(version, "version", low=1, high=MAX_VERSION)
    with transaction() as s:
        session = s.get(ChatSession, session_id)
        if session is None:
            raise SessionNotFound(f"no chat session with id {session_id!r}")
        found = s.get(SummaryVersion, (session_id, version))
        if found is None:
            raise InvalidInput(
                f"session {session_id!r} has no kept summary version {version} (its current "
                f"version is {session.summary_version}; RECAP_SUMMARY_VERSIONS_KEEP decides "
                "how many are kept)")
        return _version(found)
