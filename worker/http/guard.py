"""The front door, before FastAPI parses anything: bearer keys and the body limit.

A pure ASGI wrapper around the whole app (outside Starlette's error middleware),
so a refused request costs no parsing, no thread and no database work.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from starlette.exceptions import HTTPException

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# The one route a load balancer or orchestrator may call without a key.
OPEN_PATHS = frozenset({"/healthz"})


def parse_keys(raw: str) -> tuple[bytes, ...]:
    """The keys of RECAP_API_KEYS (comma-separated; blanks and spaces ignored)."""
    return tuple(k.strip().encode() for k in raw.split(",") if k.strip())


def key_matches(presented: bytes, keys: Sequence[bytes]) -> bool:
    """Whether ``presented`` is one of ``keys``, in time that does not depend on
    which key (or how much of one) matched: every key is compared."""
    found = False
    for key in keys:
        found |= hmac.compare_digest(presented, key)
    return found


class BodyTooLarge(HTTPException):
    """A streamed body went over the limit: an HTTPException, so FastAPI's body
    reader passes it on as is and the error handlers answer 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, too_large_message(limit))


def too_large_message(limit: int) -> str:
    return (f"the request body is over {limit} bytes (RECAP_API_MAX_BODY_BYTES); "
            "nothing was stored")


async def _reply(send: Send, status: int, type_: str, message: str,
                 headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"error": {"type": type_, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """Refuse a request without a valid ``Authorization: Bearer KEY`` (401; every
    path but /healthz) and one whose body is over ``max_body`` bytes (413, from
    Content-Length before reading, or while a chunked body streams in).
    ``keys`` empty means no authentication (``recap serve --no-auth``)."""

    def __init__(self, app: ASGIApp, *, keys: Sequence[bytes], max_body: int) -> None:
        self.app, self.keys, self.max_body = app, tuple(keys), max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        if self.keys and scope.get("path") not in OPEN_PATHS:
            auth = headers.get(b"authorization", b"")
            scheme, _, presented = auth.partition(b" ")
            if scheme.lower() != b"bearer" or not key_matches(presented.strip(), self.keys):
                await _reply(send, 401, "unauthorized",
                             "missing or wrong API key: send Authorization: Bearer KEY "
                             "(one of RECAP_API_KEYS)",
                             [(b"www-authenticate", b'Bearer realm="recap"')])
                return
        length = headers.get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await _reply(send, 400, "bad_request", "Content-Length is not a number")
                return
            if declared > self.max_body:
                await self._too_large(send)
                return
        await self._limited(scope, receive, send)

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise BodyTooLarge(self.max_body)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._too_large(send)

    async def _too_large(self, send: Send) -> None:
        await _reply(send, 413, "payload_too_large", too_large_message(self.max_body))
