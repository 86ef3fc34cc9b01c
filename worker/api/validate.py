"""Validation of what the chat app passes in; InvalidInput names the problem."""

from __future__ import annotations

from models import ROLES
from worker.core.validate import MAX_SESSION_ID, check_session_id, check_str
from worker.errors import InvalidInput

__all__ = ["MAX_CONTENT_CHARS", "check_message", "check_session_id", "check_user_id"]

# Far above any real chat message (a bigger one is almost surely a bug upstream),
# and small enough that one message is summarized within a job's time limit.
MAX_CONTENT_CHARS = 2 * 1024 * 1024


def check_message(role: object, content: object, pinned: object) -> None:
    """Raise InvalidInput naming the problem unless the message can be stored."""
    if role not in ROLES:
        raise InvalidInput(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    check_str(content, "content", max_chars=MAX_CONTENT_CHARS)
    if not isinstance(pinned, bool):
        raise InvalidInput(f"pinned must be a bool, got {type(pinned).__name__}")


def check_user_id(user_id: object) -> str | None:
    """Return ``user_id`` if it is None or a usable id (validated like session ids),
    else raise InvalidInput."""
    return None if user_id is None else check_str(user_id, "user_id", max_chars=MAX_SESSION_ID)
