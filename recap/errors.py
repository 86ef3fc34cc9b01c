"""Recap's error tree. Every error Recap raises on purpose is one of these.

    RecapError
    ├── ConfigError          a setting is missing or invalid (raised at start-up)
    │   └── DatabaseNotReady     the database is unreachable or not at the migration head
    ├── InvalidInput         a caller passed something Recap refuses to store
    │   ├── EditDropsOriginal    an edit would lose a cleared tool result's archived original
    │   └── ForgedStub           an edit holds a stub Recap did not write for that message
    ├── SessionNotFound      no chat session with that id
    ├── UserNotFound         no session names that user
    ├── ArchivedMessageNotFound  the session's archive holds no such message
    ├── SessionBusy          another job holds the session's lease; try again later
    ├── Superseded           a job's claim no longer holds; it changed nothing
    ├── BrokerUnavailable    a job could not be published to the broker
    ├── WorkerTimeout        jobs did not finish in the time a caller waited for them
    └── LLMError             the model could not produce a usable answer
        ├── TransientLLMError    worth retrying later (rate limit, overload, network, 5xx)
        │   └── UnusableSummary      the model answered, but empty, cut off or malformed
        │       └── InvalidExtraction    the memory answer was not the JSON we asked for
        └── PermanentLLMError    retrying will not help (bad key, bad request)
            └── PromptTooLong        the request exceeded the model's input limit

    UnknownModelWarning      a session's model is not a Claude model Recap knows (a warning)
"""

from __future__ import annotations


class RecapError(Exception):
    """Base class of every error Recap raises on purpose."""


class ConfigError(RecapError):
    """A setting is missing or invalid; the message names the variable."""


class DatabaseNotReady(ConfigError):
    """The database is unreachable or not migrated; the message says how to fix it."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


class InvalidInput(RecapError, ValueError):
    """Input Recap refuses to store; nothing was written."""


class EditDropsOriginal(InvalidInput):
    """An edit would change or leave out a stub whose original only the archive holds."""


class ForgedStub(InvalidInput):
    """An edit holds a stub Recap did not write over an original of that message."""


class SessionNotFound(RecapError, LookupError):
    """No chat session has this id."""


class UserNotFound(RecapError, LookupError):
    """No session names this user (or the user is outside the caller's tenant)."""


class ArchivedMessageNotFound(RecapError, LookupError):
    """The session's archive holds no message with this id (or answering this tool call)."""


class SessionBusy(RecapError):
    """Another job holds the session's lease; nothing changed, try again later."""


class Superseded(RecapError):
    """The claim no longer holds (lease lost, version moved, batch row gone); nothing changed."""


class BrokerUnavailable(RecapError):
    """A job could not be published; its pending marker was cleared for the sweeper."""


class WorkerTimeout(RecapError):
    """The jobs a caller waited for did not finish in time."""


class LLMError(RecapError):
    """The model could not produce a usable answer."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class TransientLLMError(LLMError):
    """A failure that may pass: retry later, honouring ``retry_after`` when set."""

    def __init__(self, message: str, *, retry_after: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class UnusableSummary(TransientLLMError):
    """The model answered but the text is empty, cut off or malformed."""


class InvalidExtraction(UnusableSummary):
    """The memory extraction answer was not the JSON array of facts we asked for."""


class PermanentLLMError(LLMError):
    """Retrying the same request will not help (auth, permission, bad request)."""


class PromptTooLong(PermanentLLMError):
    """The request exceeded the model's input limit; send a smaller chunk instead."""


class UnknownModelWarning(UserWarning):
    """A session's ``model`` is not one of the Claude models Recap knows; it was stored."""
