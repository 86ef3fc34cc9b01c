"""A local HTTP server that speaks the Anthropic Messages API, for tests.

The real SDK is pointed at it with ``base_url``. Tests script responses and
faults per call (``server.script(...)``); unscripted calls get a deterministic
summary. Every request is validated like the API does (shape, roles, empty
content) and recorded for assertions.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Gate:
    """Holds calls to the fake API until the test releases them (see FakeAnthropic.hold).

    ``entered`` is set once a call is being held, so a test can act *during* the
    call (write a message, take the lease) and then ``release()`` it.
    """

    def __init__(self, calls: int | None) -> None:
        self.entered = threading.Event()
        self._released = threading.Event()
        self._remaining = calls  # None: every call until released
        self.held = 0

    def take(self) -> bool:
        if self._remaining is not None:
            if self._remaining <= 0:
                return False
            self._remaining -= 1
        return True

    def wait_entered(self, timeout: float = 30.0) -> None:
        if not self.entered.wait(timeout):
            raise AssertionError(f"no call reached the fake API within {timeout}s")

    def release(self) -> None:
        self._released.set()


@dataclass
class Reply:
    """One scripted answer. ``kind``: ok | error | reset | hang | malformed."""

    kind: str = "ok"
    status: int = 200
    text: str | None = None
    stop_reason: str = "end_turn"
    headers: dict[str, str] = field(default_factory=dict)
    error_type: str = "api_error"
    message: str = "scripted failure"
    delay: float = 0.0


def ok(text: str | None = None, **kw: Any) -> Reply:
    return Reply("ok", text=text, **kw)


def error(status: int, message: str = "scripted failure", *, error_type: str | None = None,
          headers: dict[str, str] | None = None) -> Reply:
    types = {400: "invalid_request_error", 401: "authentication_error",
             403: "permission_error", 404: "not_found_error", 413: "request_too_large",
             429: "rate_limit_error", 500: "api_error", 503: "api_error",
             529: "overloaded_error"}
    return Reply("error", status=status, message=message,
                 error_type=error_type or types.get(status, "api_error"), headers=headers or {})


def validate_messages_request(body: Any) -> str | None:
    """The Messages API's own checks that matter to Recap; None when valid."""
    if not isinstance(body, dict):
        return "body: expected an object"
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return f"{key}: Field required"
    for key in ("temperature", "top_p", "top_k"):
        if key in body:  # API version 2026-10-21 removed sampling parameters
            return f"{key}: Extra inputs are not permitted"
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return "messages: first message must use the \"user\" role"
    for i, m in enumerate(messages):
        if m.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        content = m.get("content")
        if isinstance(content, str):
            if not content.strip():
                return f"messages.{i}: text content blocks must be non-empty"
        elif isinstance(content, list):
            if not content:
                return f"messages.{i}: content must be non-empty"
            for b in content:
                if b.get("type") == "text" and not str(b.get("text", "")).strip():
                    return f"messages.{i}: text content blocks must be non-empty"
        else:
            return f"messages.{i}.content: Input should be a string or a list"
    last = messages[-1]
    if (last.get("role") == "assistant" and isinstance(last.get("content"), str)
            and last["content"] != last["content"].rstrip()):
        return "messages: final assistant content cannot end with trailing whitespace"
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        return "system: Input should be a string or a list"
    return None


def default_summary(prompt: str, max_chars: int = 100_000) -> str:
    """A deterministic summary: the previous one plus a digest of each new message,
    dropping its oldest lines to stay within ``max_chars`` (as a model stays under
    max_tokens)."""
    prev = re.search(r"<previous_summary>\n(.*?)\n</previous_summary>", prompt, re.S)
    previous = prev.group(1).strip() if prev else ""
    lines = [] if previous in ("", "(none yet)") else [previous]
    for role, content in re.findall(r'<message role="(\w+)">\n(.*?)\n</message>', prompt, re.S):
        words = content.split()
        lines.append(f"The {role} said: {' '.join(words[:12])}")
    text = "\n".join(lines) or "The conversation was empty."
    while len(text) > max_chars and "\n" in text:
        text = text.split("\n", 1)[1]
    return text


def default_facts(prompt: str) -> str:
    """Memory extraction: every line starting with ``FACT:`` becomes one fact."""
    facts = [{"fact": line.split("FACT:", 1)[1].strip(), "category": "fact", "importance": 3}
             for line in prompt.splitlines() if line.strip().startswith("FACT:")]
    return json.dumps(facts)


class FakeAnthropic:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._script: deque[Reply] = deque()
        self._always: Reply | None = None
        self._lock = threading.Lock()
        self.delay = 0.0
        self.calls_started = threading.Event()
        self._gate: Gate | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
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
        with self._lock:
            self.requests.clear()
            self.headers.clear()
            self._script.clear()
            self._always = None
            self.delay = 0.0
            self.calls_started.clear()
            gate, self._gate = self._gate, None
        if gate is not None:
            gate.release()  # never leave a handler thread parked across tests

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def always(self, reply: Reply | None) -> None:
        with self._lock:
            self._always = reply

    def hold(self, calls: int | None = 1) -> Gate:
        """Hold the next ``calls`` calls (None: all) until ``gate.release()``; the
        held call is recorded first, so ``requests`` shows it while it waits."""
        gate = Gate(calls)
        with self._lock:
            self._gate = gate
        return gate

    def _wait_at_gate(self) -> None:
        with self._lock:
            gate = self._gate
            if gate is None or not gate.take():
                return
            gate.held += 1
        gate.entered.set()
        gate._released.wait(120)

    def prompts(self) -> list[str]:
        return [r["messages"][0]["content"] for r in self.requests]

    def _next(self, body: dict[str, Any], raw: bytes) -> Reply:
        """The reply to one valid request (``body`` parsed, ``raw`` as sent): the
        script, then ``always``, then a default answer. Subclasses route or inject
        faults here."""
        with self._lock:
            if self._script:
                return self._script.popleft()
            return self._always or ok()

    # -- HTTP ----------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None,
                      raw: bytes | None = None) -> None:
                data = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", "req_fake")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/messages":
                    return self._send(404, {"type": "error", "error": {
                        "type": "not_found_error", "message": f"no route {self.path}"}})
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self._send(400, _err("invalid_request_error", "invalid JSON"))
                problem = validate_messages_request(body)
                with fake._lock:
                    fake.requests.append(body)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                fake.calls_started.set()
                fake._wait_at_gate()
                if problem:
                    return self._send(400, _err("invalid_request_error", problem))
                reply = fake._next(body, raw)
                if reply.delay or fake.delay:
                    time.sleep(reply.delay or fake.delay)
                if reply.kind == "hang":
                    time.sleep(3600)
                    return None
                if reply.kind == "reset":
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
                    return None
                if reply.kind == "malformed":
                    return self._send(200, None, raw=b'{"id": "msg_1", "content": [')
                if reply.kind == "error":
                    return self._send(reply.status, _err(reply.error_type, reply.message),
                                      reply.headers)
                prompt = body["messages"][0]["content"]
                prompt_text = prompt if isinstance(prompt, str) else json.dumps(prompt)
                if reply.text is not None:
                    text = reply.text
                elif str(body.get("system", "")).startswith("You extract durable facts"):
                    text = default_facts(prompt_text)
                else:
                    text = default_summary(prompt_text, 3 * int(body["max_tokens"]))
                content = [{"type": "text", "text": text}] if text != "" else []
                return self._send(200, {
                    "id": f"msg_{len(fake.requests)}", "type": "message", "role": "assistant",
                    "model": body["model"], "content": content,
                    "stop_reason": reply.stop_reason, "stop_sequence": None,
                    "usage": {"input_tokens": max(1, len(prompt_text) // 4),
                              "output_tokens": max(1, len(text) // 4)},
                }, reply.headers)

        return Handler


def _err(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}
