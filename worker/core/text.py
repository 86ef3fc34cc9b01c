"""Text checks and clean-ups shared by input validation and model output (pure)."""

from __future__ import annotations

REDACTED = "[redacted]"


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` (an API key) replaced."""
    return text.replace(secret, REDACTED) if secret and text else text


def check_text(value: str, what: str) -> str | None:
    """Why ``value`` cannot be stored as text (NUL, lone surrogate), or None if it can."""
    if "\x00" in value:
        return f"{what} contains a NUL byte, which is not valid text"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"{what} is not valid text: {exc.reason} at position {exc.start} "
                "(a lone surrogate?)")
    return None
