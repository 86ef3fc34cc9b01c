"""Validation of what the chat app passes in; InvalidInput names the problem."""

from __future__ import annotations

from models import ROLES
from worker.core.message import MAX_CONTENT_CHARS, Message, prepare_content
from worker.core.validate import MAX_SESSION_ID, check_session_id, check_str
from worker.errors import InvalidInput

__all__ = ["MAX_CONTENT_CHARS", "Message", "check_message", "check_session_id",
           "check_user_id", "prepare_message"]


def check_message(role: object, content: object, pinned: object) -> None:
    """Raise InvalidInput naming the problem unless the (string) message can be stored."""
    _check_role(role)
    check_str(content, "content", max_chars=MAX_CONTENT_CHARS)
    _check_pinned(pinned)


def prepare_message(role: object, content: object, pinned: object, *,
                    max_inline_chars: int) -> Message:
    """The message to store, from a string or a Messages API content array (see
    :func:`worker.core.message.prepare_content`). Raises InvalidInput."""
    _check_role(role)
    _check_pinned(pinned)
    assert isinstance(role, str)
    return prepare_content(role, content, max_inline_chars=max_inline_chars)


def _check_role(role: object) -> None:
    if role not in ROLES:
        raise InvalidInput(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")


def _check_pinned(pinned: object) -> None:
    if not isinstance(pinned, bool):
        raise InvalidInput(f"pinned must be a bool, got {type(pinned).__name__}")


def check_user_id(user_id: object) -> str | None:
    """Return ``user_id`` if it is None or a usable id (validated like session ids),
    else raise InvalidInput."""
    return None if user_id is None else check_str(user_id, "user_id", max_chars=MAX_SESSION_ID)
