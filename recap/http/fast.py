"""The reply path's three routes (POST messages, replied, context) served without
FastAPI's per-request machinery, which costs as much as the calls themselves.

A pure ASGI layer between the guard and FastAPI: a well-formed request to one of
the three is parsed with the routes' own request models, run by the routes' own
functions (one hop to a worker thread) and answered with their responses; errors
the call raises get :func:`recap.http.errors.answer`, as in FastAPI. Anything
else (another route or method, a body that is not JSON or not valid for the
model, a mount path) goes to FastAPI with the body as read, so every error
answer keeps coming from one place. FastAPI still declares the three routes:
the OpenAPI schema and any request this layer passes on use them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import ValidationError
from starlette.responses import Response

from recap.http import errors
from recap.http.guard import ASGIApp, Message, Receive, Scope, Send
from recap.http.ids import segment_value
from recap.http.offload import in_thread
from recap.http.routes import messages
from recap.http.schemas import ContextIn, MessagesIn

_PATH = re.compile(r"/v1/sessions/([^/]+)/(messages|replied|context)")


class ReplyPath:
    """Serve the reply path's POSTs directly; pass everything else to ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = (_PATH.fullmatch(scope["path"]) if scope["type"] == "http"
                 and scope["method"] == "POST" and not scope.get("root_path") else None)
        if match is None:
            await self.app(scope, receive, send)
            return
        segment, route = match.groups()
        session_id = segment_value(segment)
        if route == "replied":  # no body: FastAPI would not read one either
            await self._answer(scope, receive, send, lambda: messages.replied(session_id))
            return
        body = await _read_body(receive)
        if body is None:
            return  # the client went away
        call = _call(route, session_id, scope, body)
        if call is None:  # FastAPI answers (its error, from the body as read)
            await self.app(scope, _replay(body, receive), send)
            return
        await self._answer(scope, receive, send, call)

    @staticmethod
    async def _answer(scope: Scope, receive: Receive, send: Send,
                      call: Callable[[], Response]) -> None:
        try:
            response = await in_thread(call)
        except Exception as exc:
            response = errors.answer(exc, method=scope["method"], path=scope["path"])
        await response(scope, receive, send)


def _call(route: str, session_id: str, scope: Scope,
          body: bytes) -> Callable[[], Response] | None:
    """The call that answers the request, or None when its body is not a valid one."""
    headers = scope["headers"]
    content_type = next((v for k, v in headers if k == b"content-type"), None)
    if not body or not errors.is_json(content_type):
        return None
    try:
        if route == "context":
            ctx = ContextIn.model_validate_json(body)
            return lambda: messages.context(session_id, ctx)
        parsed = MessagesIn.model_validate_json(body)
    except ValidationError:
        return None
    key = next((v.decode("latin-1") for k, v in headers if k == b"idempotency-key"), None)
    return lambda: messages.store(session_id, parsed, key)


async def _read_body(receive: Receive) -> bytes | None:
    """The request's body; None if the client went away."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives ``body`` once, then what ``receive`` gives."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
