"""The stand-in's HTTP side: one POST handler for ``/v1/messages`` (JSON, or the
event stream when the request says ``"stream": true``), its
``/v1/messages/count_tokens`` and the OpenAI-compatible ``/v1/chat/completions``;
faults (reset, hang, malformed, trickle) are sent here."""

from __future__ import annotations

import json
import socket
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from recap.testing.chat_completions import (
    BadRequest,
    chunks_body,
    to_chat_completion,
    to_messages_request,
)
from recap.testing.replies import Reply, Request
from recap.testing.stream import sse_body
from recap.testing.trickle import raw_response, send_trickled
from recap.testing.validate import validate_messages_request

if TYPE_CHECKING:
    from recap.testing.server import FakeAnthropic

MESSAGES, CHAT = "/v1/messages", "/v1/chat/completions"
COUNT = MESSAGES + "/count_tokens"


class Server(ThreadingHTTPServer):
    daemon_threads = True
    log_errors = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if self.log_errors:
            super().handle_error(request, client_address)


def _err(kind: str, message: str, *, chat: bool = False) -> dict[str, Any]:
    if chat:  # the OpenAI SDK's error shape
        return {"error": {"type": kind, "message": message, "code": None, "param": None}}
    return {"type": "error", "error": {"type": kind, "message": message}}


def count_request(fake: FakeAnthropic, raw: bytes) -> tuple[int, dict[str, Any]]:
    """(status, body) for ``POST /v1/messages/count_tokens`` before any scripted
    answer: 404 when the fake does not offer it (FakeAnthropic.count_tokens), 400
    for a body /v1/messages would refuse (but for ``max_tokens``, which a count does
    not take); else 200 with the fake's count, and the body is recorded."""
    if fake.token_ratio is None:
        return 404, _err("not_found_error", f"no route {COUNT}")
    try:
        body = json.loads(raw)
    except ValueError:
        return 400, _err("invalid_request_error", "invalid JSON")
    problem = validate_messages_request(
        {**body, "max_tokens": 1} if isinstance(body, dict) else body)
    if problem:
        return 400, _err("invalid_request_error", problem)
    fake.counted.append(body)
    return 200, {"input_tokens": fake.model_tokens(body)}


class Handler(BaseHTTPRequestHandler):
    """Answers for one FakeAnthropic (:func:`handler` binds ``fake``)."""

    protocol_version = "HTTP/1.1"
    fake: FakeAnthropic

    trickle = 0.0  # this request's seconds between bytes (see trickle())

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None,
              raw: bytes | None = None, kind: str = "application/json") -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        fields = [("content-type", kind),
                  ("content-length", str(len(data))), ("request-id", "req_fake"),
                  *(headers or {}).items()]
        if self.trickle:
            return self._trickle(raw_response(
                status, self.responses.get(status, ("",))[0], fields, data))
        self.send_response(status)
        for k, v in fields:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        return None

    def _trickle(self, data: bytes) -> None:
        generation = self.fake.generation

        if not send_trickled(self.wfile.write, data, self.trickle,
                             stopped=lambda: self.fake.generation != generation,
                             last=self.fake.count_trickle_finished):
            self.close_connection = True

    def _reset_mid_body(self) -> None:
        # Abort mid-response: headers promise a body that never comes.
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "1000")
        self.end_headers()
        self.wfile.write(b'{"id": "msg_')
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                   b"\x01\x00\x00\x00\x00\x00\x00\x00")
        self.connection.close()
        self.close_connection = True

    def do_POST(self) -> None:
        self.trickle = 0.0
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        path = self.path.rstrip("/")
        chat = path == CHAT
        if path == COUNT:
            return self._count(raw)
        if path not in (MESSAGES, CHAT):
            return self._send(404, _err("not_found_error", f"no route {path}"))
        try:
            body = json.loads(raw)
        except ValueError:
            return self._send(400, _err("invalid_request_error", "invalid JSON", chat=chat))
        stream = isinstance(body, dict) and body.get("stream") is True
        try:
            body = to_messages_request(body) if chat else body
        except BadRequest as exc:
            return self._send(400, _err("invalid_request_error", str(exc), chat=True))
        problem = validate_messages_request(body)
        headers = {k.lower(): v for k, v in self.headers.items()}
        number = self.fake.record(body, headers)
        if problem:
            return self._send(400, _err("invalid_request_error", problem, chat=chat))
        request = Request(body, raw, headers)
        reply = self.fake.reply_to(request)
        if self._fault(reply, chat=chat):
            return None
        self._answer(self.fake.message(request, reply, number), reply.headers,
                     chat=chat, stream=stream)
        return None

    def _count(self, raw: bytes) -> None:
        status, payload = count_request(self.fake, raw)
        if status != 200:
            return self._send(status, payload)
        reply = self.fake.count_reply()
        if self._fault(reply, chat=False):
            return None
        if reply.input_tokens is not None:
            payload = {"input_tokens": reply.input_tokens}
        return self._send(200, payload, reply.headers)

    def _fault(self, reply: Reply, *, chat: bool) -> bool:
        """Send ``reply``'s fault (after its delay; its trickle set for any
        answer); True when it was one, so nothing else is sent."""
        self.trickle = reply.trickle or self.fake.trickle_s
        if reply.delay or self.fake.delay:
            time.sleep(reply.delay or self.fake.delay)
        if reply.kind == "hang":
            time.sleep(3600)
        elif reply.kind == "reset":
            self._reset_mid_body()
        elif reply.kind == "malformed":
            self._send(200, None, raw=b'{"id": "msg_1", "content": [')
        elif reply.kind == "error":
            self._send(reply.status, _err(reply.error_type, reply.message, chat=chat),
                       reply.headers)
        else:
            return False
        return True

    def _answer(self, message: dict[str, Any], headers: dict[str, str], *, chat: bool,
                stream: bool) -> None:
        if chat:
            completion = to_chat_completion(message)
            if stream:
                return self._send(200, None, headers, chunks_body(completion),
                                  "text/event-stream")
            return self._send(200, completion, headers)
        if stream:
            return self._send(200, None, headers, sse_body(message), "text/event-stream")
        return self._send(200, message, headers)


def handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    """The request handler class of ``fake``'s server."""
    return type("Handler", (Handler,), {"fake": fake})
