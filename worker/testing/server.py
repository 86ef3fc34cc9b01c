"""FakeAnthropic: a local HTTP server that speaks the Anthropic Messages API.

The real SDK is pointed at it with ``base_url``. Each valid request is answered by
the first that applies of: the routes a test set (:meth:`FakeAnthropic.route`), the
script (:meth:`~FakeAnthropic.script`), the standing reply (:meth:`~FakeAnthropic.always`),
the default answer (recap.testing.recap). Every request is validated as the API
does (recap.testing.validate) and recorded for assertions.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from recap.testing.gate import Gate
from recap.testing.recap import answer
from recap.testing.replies import Reply, Request, Route
from recap.testing.trickle import raw_response, send_trickled
from recap.testing.usage import request_usage
from recap.testing.validate import validate_messages_request


class FakeAnthropic:
    """The Messages API stand-in: ``FakeAnthropic().start()``, then ``.url``.

    ``routes``: standing routes, consulted after the test's own (:meth:`route`) and
    kept by :meth:`reset` (a double that answers other clients' prompts, a fault
    injector). ``log_errors=False`` keeps the server quiet about clients that drop
    their connections (tests that kill workers on purpose).
    """

    def __init__(self, *, routes: Sequence[Route] = (), log_errors: bool = True,
                 port: int = 0) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.delay = 0.0  # seconds before every answer (a slow API)
        self.trickle_s = 0.0  # trickle(): seconds between the bytes of every answer
        self.trickles_finished = 0  # trickled answers sent to their last byte
        self.generation = 0  # bumped by reset(): a trickle in progress stops
        self.calls_started = threading.Event()
        # lose_specifics(): the share of specifics dropped from default answers.
        self.lossy_fraction = 0.0
        self.lossy_seed = 0
        self._script: deque[Reply] = deque()
        self._always: Reply | None = None
        self._routes: list[Route] = []
        self._standing = tuple(routes)
        self._lock = threading.Lock()
        self._gate: Gate | None = None
        self._cache: set[bytes] = set()  # request prefixes written to the "prompt cache"
        self._server = _Server(("127.0.0.1", port), _handler(self))  # 0: any free port
        self._server.log_errors = log_errors
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # -- control -------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        """Forget requests, script, routes, delay, lossy mode and the prompt cache;
        release a held call."""
        with self._lock:
            self.requests.clear()
            self.headers.clear()
            self._script.clear()
            self._always = None
            self._routes.clear()
            self.delay = 0.0
            self.trickle_s, self.trickles_finished = 0.0, 0
            self.generation += 1
            self.lossy_fraction, self.lossy_seed = 0.0, 0
            self.calls_started.clear()
            self._cache.clear()
            gate, self._gate = self._gate, None
        if gate is not None:
            gate.release()  # never leave a handler thread parked across tests

    def script(self, *replies: Reply) -> None:
        """Answer the next calls with ``replies``, in order (after any route)."""
        with self._lock:
            self._script.extend(replies)

    def always(self, reply: Reply | None) -> None:
        """Answer every call the routes and the script leave with ``reply`` (None: defaults)."""
        with self._lock:
            self._always = reply

    def route(self, fn: Route) -> Route:
        """Consult ``fn(request)`` before the script for every call: a Reply answers
        it, None passes it on. Routes run in the order set, before the standing
        ones; reset() drops them.
        Returns ``fn``, so it can decorate."""
        with self._lock:
            self._routes.append(fn)
        return fn

    def lose_specifics(self, fraction: float, *, seed: int = 0) -> None:
        """Lossy mode: default answers (summaries, facts, repairs) drop ``fraction`` of
        their specifics, deterministically by ``seed`` (see drop_specifics)."""
        with self._lock:
            self.lossy_fraction, self.lossy_seed = fraction, seed

    def trickle(self, seconds_per_byte: float) -> None:
        """Send every answer one byte every ``seconds_per_byte`` (0: off), status
        line and headers included, as a slow or hostile server or proxy does: no
        single read waits long, so only a total deadline ends the call. A reply's
        own ``trickle`` wins; ``trickles_finished`` counts answers sent whole;
        ``reset()`` stops a trickle in progress."""
        with self._lock:
            self.trickle_s = seconds_per_byte

    def hold(self, calls: int | None = 1) -> Gate:
        """Hold the next ``calls`` calls (None: all) until ``gate.release()``; the
        held call is recorded first, so ``requests`` shows it while it waits."""
        gate = Gate(calls)
        with self._lock:
            self._gate = gate
        return gate

    def prompts(self) -> list[str]:
        """The first message of every request, in order."""
        return [r["messages"][0]["content"] for r in self.requests]

    def reply_to(self, request: Request) -> Reply:
        """The reply the fake gives ``request``: routes, script, always, default."""
        with self._lock:
            routes = [*self._routes, *self._standing]
        for fn in routes:
            reply = fn(request)
            if reply is not None:
                return reply
        with self._lock:
            if self._script:
                return self._script.popleft()
            return self._always or Reply()

    # -- one call --------------------------------------------------------------
    def _record(self, body: Any, headers: dict[str, str]) -> int:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            number = len(self.requests)
        self.calls_started.set()
        with self._lock:
            gate = self._gate if self._gate is not None and self._gate.take() else None
            if gate is not None:
                gate.held += 1
        if gate is not None:
            gate.entered.set()
            gate.released.wait(120)
        return number

    def _message(self, request: Request, reply: Reply, number: int) -> dict[str, Any]:
        with self._lock:
            fraction, seed = self.lossy_fraction, self.lossy_seed
        content, text, stop = answer(request, reply, number=number,
                                     fraction=0.0 if reply.text is not None else fraction,
                                     seed=seed)
        with self._lock:
            usage = request_usage(request.body, self._cache)
        return {"id": f"msg_{number}", "type": "message", "role": "assistant",
                "model": request.body["model"], "content": content, "stop_reason": stop,
                "stop_sequence": None,
                "usage": {**usage, "output_tokens": max(1, len(text) // 4)}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    log_errors = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if self.log_errors:
            super().handle_error(request, client_address)


def _err(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        trickle = 0.0  # this request's seconds between bytes (see trickle())

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None,
                  raw: bytes | None = None) -> None:
            data = raw if raw is not None else json.dumps(payload).encode()
            fields = [("content-type", "application/json"),
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
            generation = fake.generation

            def finishing() -> None:
                with fake._lock:
                    fake.trickles_finished += 1

            if not send_trickled(self.wfile.write, data, self.trickle,
                                 stopped=lambda: fake.generation != generation, last=finishing):
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

        def do_POST(self) -> None:  # noqa: N802
            self.trickle = 0.0
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.path.rstrip("/") != "/v1/messages":
                return self._send(404, _err("not_found_error", f"no route {self.path}"))
            try:
                body = json.loads(raw)
            except ValueError:
                return self._send(400, _err("invalid_request_error", "invalid JSON"))
            problem = validate_messages_request(body)
            headers = {k.lower(): v for k, v in self.headers.items()}
            number = fake._record(body, headers)
            if problem:
                return self._send(400, _err("invalid_request_error", problem))
            request = Request(body, raw, headers)
            reply = fake.reply_to(request)
            self.trickle = reply.trickle or fake.trickle_s
            if reply.delay or fake.delay:
                time.sleep(reply.delay or fake.delay)
            if reply.kind == "hang":
                time.sleep(3600)
            elif reply.kind == "reset":
                self._reset_mid_body()
            elif reply.kind == "malformed":
                self._send(200, None, raw=b'{"id": "msg_1", "content": [')
            elif reply.kind == "error":
                self._send(reply.status, _err(reply.error_type, reply.message), reply.headers)
            else:
                self._send(200, fake._message(request, reply, number), reply.headers)
            return None

    return Handler
