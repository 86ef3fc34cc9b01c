"""Validation of what callers pass in (pure); InvalidInput names the problem."""

from __future__ import annotations

import json
from typing import Any

from recap.core.tenant import session_in_scope
from recap.core.text import check_text
from recap.errors import InvalidInput

MAX_SESSION_ID = 255
# Message ids are 64-bit (BIGINT; SQLite's INTEGER), summary versions 32-bit
# (INTEGER): a larger number names nothing and would overflow the column.
MAX_ROW_ID = 2**63 - 1
MAX_VERSION = 2**31 - 1


def text_or_raise(value: str, what: str) -> None:
    """Raise InvalidInput if ``value`` cannot be stored as text."""
    problem = check_text(value, what)
    if problem:
        raise InvalidInput(problem)


def check_str(value: object, what: str, *, max_chars: int) -> str:
    """Return ``value`` if it is storable, non-blank text of at most ``max_chars``
    characters; else raise InvalidInput naming ``what``."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(f"{what} is empty or whitespace only")
    if len(value) > max_chars:
        raise InvalidInput(f"{what} is {len(value)} characters; at most {max_chars} are allowed")
    text_or_raise(value, what)
    return value


def check_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is a usable id, else raise InvalidInput; raise
    SessionNotFound if it is outside the current tenant (recap.core.tenant)."""
    checked = check_str(session_id, "session_id", max_chars=MAX_SESSION_ID)
    session_in_scope(checked)
    return checked


def check_whole(value: object, what: str, *, low: int, high: int) -> int:
    """Return ``value`` if it is a whole number from ``low`` to ``high``; else raise
    InvalidInput naming ``what`` (before any statement sees it)."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidInput(f"{what} must be a whole number from {low} to {high}, got "
                           f"{value!r}")
    return value


def json_object(line: str) -> dict[str, Any]:
    """One JSON-lines record as a dict; InvalidInput names what it is instead."""
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise InvalidInput(f"invalid JSON: {exc}") from None
    if not isinstance(record, dict):
        raise InvalidInput(f"expected a JSON object, got {type(record).__name__}")
    return record
