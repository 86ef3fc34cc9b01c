"""The front door, before FastAPI parses anything: the Host rules, bearer keys and
their tenants, the body limit, HEAD, and the path routes see.

A pure ASGI wrapper around the whole app (outside Starlette's error middleware),
so a refused request costs no parsing, no thread and no database work.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException

from recap.core.tenant import check_tenant, tenant
from recap.errors import ConfigError, InvalidInput
from recap.http.errors import error_body
from recap.http.hosts import allowed, host_name, origin_allowed
from recap.http.ids import routed_path

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# The one route a load balancer or orchestrator may call without a key (or by the
# address it knows the server by: it reveals nothing).
OPEN_PATHS = frozenset({"/healthz"})
# What a tenant's key may not read: figures over every tenant.
UNSCOPED_PATHS = frozenset({"/metrics"})


@dataclass(frozen=True)
class ApiKey:
    """A key of RECAP_API_KEYS and the tenant it is bound to (None: every id)."""

    secret: bytes
    tenant: str | None = None


def parse_keys(raw: str) -> tuple[ApiKey, ...]:
    """The keys of RECAP_API_KEYS: comma-separated, each ``KEY`` or ``KEY:TENANT``
    (blanks and spaces ignored). Raises ConfigError naming a bad tenant (never the key)."""
    keys = []
    for n, item in enumerate((k.strip() for k in raw.split(",")), start=1):
        if not item:
            continue
        secret, sep, name = item.rpartition(":")
        if not sep:
            keys.append(ApiKey(item.encode()))
            continue
        try:
            check_tenant(name.strip())
        except InvalidInput as exc:
            raise ConfigError(f"RECAP_API_KEYS: entry {n} (KEY:TENANT): {exc}") from None
        if not secret.strip():
            raise ConfigError(f"RECAP_API_KEYS: entry {n} (KEY:TENANT) has no key")
        keys.append(ApiKey(secret.strip().encode(), name.strip()))
    return tuple(keys)


def matching_key(presented: bytes, keys: Sequence[ApiKey]) -> ApiKey | None:
    """The key ``presented`` is, in time that does not depend on which key (or how
    much of one) matched: every key is compared."""
    found = None
    for key in keys:
        if hmac.compare_digest(presented, key.secret):
            found = key
    return found


def _without_body(send: Send) -> Send:
    """``send`` for a HEAD request: the GET's status and headers, no body."""

    async def head_send(message: Message) -> None:
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return head_send


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
    """An error answered here, before the app: the body every other error has
    (recap.http.errors.error_body)."""
    body = error_body(type_, message)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """Refuse, in this order: a Host (or an Origin) outside ``hosts`` (400, 403;
    None: any), a request without a valid ``Authorization: Bearer KEY`` (401; every
    path but /healthz), and one whose body is over ``max_body`` bytes (413, from
    Content-Length before reading, or while a chunked body streams in). ``keys``
    empty means no authentication (``recap serve --no-auth``). A tenant's key
    runs the request scoped to its tenant (recap.core.tenant). HEAD is answered
    as GET, without the body."""

    def __init__(self, app: ASGIApp, *, keys: Sequence[ApiKey], max_body: int,
                 hosts: tuple[str, ...] | None = None) -> None:
        self.app, self.keys, self.max_body, self.hosts = app, tuple(keys), max_body, hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope = {**scope, "path": routed_path(scope.get("raw_path") or
                                              scope["path"].encode("latin-1"))}
        headers = dict(scope.get("headers") or ())
        open_path = scope["path"] in OPEN_PATHS
        if self.hosts is not None and not open_path:
            if not allowed(host_name(headers.get(b"host", b"").decode("latin-1")), self.hosts):
                await _reply(send, 400, "invalid_host",
                             "this server does not answer to this Host name "
                             "(RECAP_API_ALLOWED_HOSTS, or loopback names with --no-auth)")
                return
            origin = headers.get(b"origin")
            if origin is not None and not origin_allowed(origin.decode("latin-1"), self.hosts):
                await _reply(send, 403, "forbidden_origin",
                             "requests from this Origin are refused (its host is not one "
                             "of RECAP_API_ALLOWED_HOSTS)")
                return
        key = None
        if self.keys and not open_path:
            auth = headers.get(b"authorization", b"")
            scheme, _, presented = auth.partition(b" ")
            key = matching_key(presented.strip(), self.keys) if scheme.lower() == b"bearer" \
                else None
            if key is None:
                await _reply(send, 401, "unauthorized",
                             "missing or wrong API key: send Authorization: Bearer KEY "
                             "(one of RECAP_API_KEYS)",
                             [(b"www-authenticate", b'Bearer realm="recap"')])
                return
            if key.tenant is not None and scope["path"] in UNSCOPED_PATHS:
                await _reply(send, 403, "forbidden",
                             "this key is bound to a tenant: /metrics needs an unscoped key")
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
        if scope["method"] == "HEAD":
            scope, send = {**scope, "method": "GET"}, _without_body(send)
        with tenant(key.tenant if key is not None else None):
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
