"""Validation of what callers pass in (pure); InvalidInput names the problem."""

from __future__ import annotations

from worker.core.text import check_text
from worker.errors import InvalidInput

MAX_SESSION_ID = 255


def text_or_raise(value: str, what: str) -> None:
    """Raise InvalidInput if ``value`` cannot be stored as text."""
    problem = check_text(value, what)
    if problem:
        raise InvalidInput(problem)


def check_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is a usable id, else raise InvalidInput."""
    if not isinstance(session_id, str):
        raise InvalidInput(f"session_id must be a str, got {type(session_id).__name__}")
    if not session_id.strip():
        raise InvalidInput("session_id is empty")
    if len(session_id) > MAX_SESSION_ID:
        raise InvalidInput(f"session_id is {len(session_id)} characters; "
                           f"at most {MAX_SESSION_ID} are allowed")
    text_or_raise(session_id, "session_id")
    return session_id
