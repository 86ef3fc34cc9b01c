"""Every error as data: ``{"error": {"type", "message"}}`` with a status that says
what to do (fix the request, retry later, or look at the server), never a bare
500 with a traceback."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from recap.errors import (
    ArchivedMessageNotFound,
    BrokerUnavailable,
    ConfigError,
    DatabaseNotReady,
    InvalidInput,
    RecapError,
    SessionBusy,
    SessionNotFound,
    UserNotFound,
)

log = logging.getLogger("recap.http")

# Seconds a client waits before retrying a session a job holds: a summarize call
# usually ends within a few seconds.
RETRY_AFTER_S = 2

_HTTP_TYPES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 413: "payload_too_large", 415: "unsupported_media_type"}


class ApiError(Exception):
    """An answer other than success, raised by a route: status, type and message."""

    def __init__(self, status: int, type_: str, message: str, *,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.type, self.message = status, type_, message
        self.headers = headers or {}


def error_json(status: int, type_: str, message: str, *,
               headers: dict[str, str] | None = None) -> JSONResponse:
    """The error response: ``{"error": {"type": ..., "message": ...}}``."""
    return JSONResponse({"error": {"type": type_, "message": message}}, status_code=status,
                        headers=headers)


def error_body(type_: str, message: str) -> bytes:
    """The bytes of :func:`error_json`'s body, for a layer that answers without
    Starlette (the guard, the HTTP protocol): every error body reads the same."""
    return bytes(error_json(400, type_, message).body)


def classify(exc: BaseException) -> ApiError | None:
    """The answer for an exception a Recap call raised; None for an unexpected one."""
    from sqlalchemy.exc import (
        DisconnectionError,
        InterfaceError,
        OperationalError,
        ProgrammingError,
    )
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, InvalidInput):  # the request's fault: nothing was written
        return ApiError(422, "invalid_input", str(exc))
    if isinstance(exc, SessionNotFound | UserNotFound | ArchivedMessageNotFound):
        return ApiError(404, "not_found", str(exc))
    if isinstance(exc, SessionBusy):  # a job holds the lease: the same request works later
        return ApiError(409, "session_busy", str(exc),
                        headers={"Retry-After": str(RETRY_AFTER_S)})
    if isinstance(exc, BrokerUnavailable):
        return ApiError(503, "broker_unavailable", str(exc))
    if isinstance(exc, DatabaseNotReady):  # one line naming the fix (recap.migrate)
        kind = "database_unavailable" if exc.unreachable else "database_not_migrated"
        return ApiError(503, kind, str(exc), headers={"Retry-After": str(RETRY_AFTER_S)})
    if isinstance(exc, ConfigError):
        return ApiError(503, "misconfigured", str(exc))
    if isinstance(exc, RecapError):
        return ApiError(503, "unavailable", str(exc))
    if isinstance(exc, ProgrammingError):
        first = str(exc.orig or exc).splitlines()[0]
        if "does not exist" in first or "no such table" in first:
            return ApiError(503, "database_not_migrated",
                            f"the database is not migrated ({first}); run recap db upgrade")
        return None
    if isinstance(exc, OperationalError | InterfaceError | DisconnectionError | PoolTimeout):
        # The database is down, unreachable or saturated: the request may be retried.
        # (Any other database error is a bug, not an outage: a 500, logged.)
        # Only the driver's first line: statements and parameters stay in no answer.
        first = str(getattr(exc, "orig", None) or type(exc).__name__).splitlines()[0]
        return ApiError(503, "database_unavailable", f"the database is unavailable: {first}",
                        headers={"Retry-After": str(RETRY_AFTER_S)})
    return None


def is_json(content_type: str | bytes | None) -> bool:
    """Whether a Content-Type header names JSON (``application/json``, any
    parameters, or an ``application/...+json`` type): what FastAPI parses a body as."""
    if content_type is None:
        return False
    text = content_type.decode("latin-1") if isinstance(content_type, bytes) else content_type
    media = text.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/")
                                           and media.endswith("+json"))


def content_type_problem(content_type: str | None) -> str:
    """The 415 message for a body sent without ``Content-Type: application/json``."""
    got = ("the request has no Content-Type header" if content_type is None
           else f"its Content-Type header is {content_type!r}")
    return (f"the body must be JSON sent with the header Content-Type: application/json; "
            f"{got}")


def field_problems(exc: RequestValidationError) -> str:
    """Each schema problem as ``field: message``, e.g. ``body.role: Field required``."""
    parts = []
    for problem in exc.errors():
        where = ".".join(str(p) for p in problem.get("loc", ())) or "body"
        parts.append(f"{where}: {problem.get('msg', 'invalid')}")
    return "; ".join(parts)


def answer(exc: BaseException, *, method: str, path: str) -> JSONResponse:
    """The error response for an exception a route raised; an unexpected one is a 500
    whose traceback goes to the server's log, never to the client."""
    found = classify(exc)
    if found is None:
        log.error("unexpected %s in %s %s", type(exc).__name__, method, path, exc_info=exc)
        return error_json(500, "internal", "an unexpected error; the server log has the "
                          "details")
    return error_json(found.status, found.type, found.message, headers=found.headers)


def install(app: FastAPI) -> None:
    """Map every exception to a JSON error on ``app``."""

    async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
        return answer(exc, method=request.method, path=request.url.path)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        if any(p.get("type") == "json_invalid" for p in exc.errors()):
            return error_json(400, "invalid_json", "the request body is not valid JSON")
        # A body not declared as JSON is never parsed as JSON: say why, not what the
        # unparsed bytes fail to be.
        content_type = request.headers.get("content-type")
        if not is_json(content_type) and any(
                tuple(p.get("loc", ()))[:1] == ("body",) for p in exc.errors()):
            return error_json(415, "unsupported_media_type",
                              content_type_problem(content_type))
        return error_json(422, "invalid_input", field_problems(exc))

    async def on_http(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        detail = exc.detail if isinstance(exc.detail, str) else "request refused"
        return error_json(exc.status_code, _HTTP_TYPES.get(exc.status_code, "http_error"),
                          detail, headers=dict(exc.headers or {}))

    handlers: dict[Any, Any] = {
        ApiError: on_api_error, RecapError: on_api_error, RequestValidationError: on_validation,
        StarletteHTTPException: on_http, Exception: on_api_error,
    }
    from sqlalchemy.exc import SQLAlchemyError

    handlers[SQLAlchemyError] = on_api_error
    for kind, handler in handlers.items():
        app.add_exception_handler(kind, handler)
