"""Recap's error tree. Every error Recap raises on purpose is one of these.

    RecapError
    ├── ConfigError          a setting is missing or invalid (raised at start-up)
    ├── InvalidInput         a caller passed something Recap refuses to store
    ├── SessionNotFound      no chat session with that id
    └── LLMError             the summarizer could not produce a usable summary
        ├── TransientLLMError    worth retrying later (rate limit, overload, network, 5xx)
        │   └── UnusableSummary      the model answered, but empty or cut off
        └── PermanentLLMError    retrying will not help (bad key, bad request)
            └── PromptTooLong        the request exceeded the model's input limit
"""

from __future__ import annotations


class RecapError(Exception):
    """Base class of every error Recap raises on purpose."""


class ConfigError(RecapError):
    """A setting is missing or invalid; the message names the variable."""


class InvalidInput(RecapError, ValueError):
    """Input Recap refuses to store; nothing was written."""


class SessionNotFound(RecapError, LookupError):
    """No chat session has this id."""


class LLMError(RecapError):
    """The summarizer could not produce a usable summary.

    ``partial`` carries what earlier calls of the same job spent (a SummaryResult).
    """

    partial: object = None


class TransientLLMError(LLMError):
    """A failure that may pass: retry later, honouring ``retry_after`` when set."""

    def __init__(self, message: str, *, retry_after: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class UnusableSummary(TransientLLMError):
    """The model answered but the text is empty or was cut off at max_tokens."""


class PermanentLLMError(LLMError):
    """Retrying the same request will not help (auth, permission, bad request)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class PromptTooLong(PermanentLLMError):
    """The request exceeded the model's input limit; send a smaller chunk instead."""
