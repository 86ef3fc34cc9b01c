"""A local HTTP server that speaks the Anthropic Messages API, for tests.

The real SDK is pointed at it with ``base_url``. Tests script responses and
faults per call (``server.script(...)``); unscripted calls get a deterministic
summary. Every request is validated like the API does (shape, roles, empty
content) and recorded for assertions.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from worker.testing.answers import (
    default_facts,
    default_repair,
    default_summary,
    drop_specifics,
    tool_input,
)
from worker.testing.blocks import validate_content_blocks
from worker.testing.trickle import raw_response, send_trickled
from worker.testing.weak import Weak, weaken_text, weaken_tool_input


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
    # Seconds between bytes: the whole answer, status line and headers included,
    # sent one byte at a time (see FakeAnthropic.trickle). 0: all at once.
    trickle: float = 0.0


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
    problem = validate_content_blocks(messages)
    if problem:
        return problem
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        return "system: Input should be a string or a list"
    return validate_cache_control(body)


# -- prompt caching -------------------------------------------------------------------

MAX_CACHE_BREAKPOINTS = 4
# The fake's tokenizer: deterministic and independent of Recap's (tiktoken), so a
# test can compare Recap's estimate with "the API's" count: ceil(chars / 3.5).
CHARS_PER_TOKEN = 3.5


def _cacheable(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(location, block) for every block that may carry ``cache_control``, in the
    API's prefix order: tools, system, messages."""
    out = [(f"tools.{i}", t) for i, t in enumerate(body.get("tools") or [])
           if isinstance(t, dict)]
    if isinstance(body.get("system"), list):
        out += [(f"system.{i}", b) for i, b in enumerate(body["system"]) if isinstance(b, dict)]
    for i, m in enumerate(body.get("messages") or []):
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            out += [(f"messages.{i}.content.{j}", b) for j, b in enumerate(m["content"])
                    if isinstance(b, dict)]
    return out


def validate_cache_control(body: dict[str, Any]) -> str | None:
    """The API's checks of ``cache_control``: at most 4 breakpoints across tools,
    system and messages; ``{"type": "ephemeral"}`` with an optional ``ttl`` of
    "5m" or "1h", no 1h breakpoint after a 5m one; never on an empty text block
    or a thinking block. None when valid."""
    marked = [(where, b) for where, b in _cacheable(body) if "cache_control" in b]
    if len(marked) > MAX_CACHE_BREAKPOINTS:
        return (f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be "
                f"provided. Found {len(marked)}.")
    seen_5m = False
    for where, block in marked:
        cc = block["cache_control"]
        if not isinstance(cc, dict) or cc.get("type") != "ephemeral":
            return f"{where}.cache_control.type: Input should be 'ephemeral'"
        extra = set(cc) - {"type", "ttl"}
        if extra:
            return f"{where}.cache_control.{sorted(extra)[0]}: Extra inputs are not permitted"
        ttl = cc.get("ttl", "5m")
        if ttl not in ("5m", "1h"):
            return f"{where}.cache_control.ttl: Input should be '5m' or '1h'"
        if ttl == "1h" and seen_5m:
            return ("a ttl='1h' cache_control block must not come after a ttl='5m' "
                    f"cache_control block ({where})")
        seen_5m = seen_5m or ttl == "5m"
        if block.get("type") in ("thinking", "redacted_thinking"):
            return f"{where}.{block['type']}.cache_control: Extra inputs are not permitted"
        if block.get("type") == "text" and not str(block.get("text", "")).strip():
            return f"{where}: cache_control cannot be set for empty text blocks"
    return None


def fake_tokens(chars: int) -> int:
    """The fake's token count of ``chars`` characters of request text."""
    return -(-2 * chars // 7)  # ceil(chars / 3.5) in integers


def _units(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The request as (text, carries a breakpoint) units in prefix order; the text
    of a unit is what the fake counts, its serialization what a prefix matches."""
    units = [(json.dumps(t, sort_keys=True), "cache_control" in t)
             for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str) and system:
        units.append((system, False))
    elif isinstance(system, list):
        units += [(str(b.get("text", "")), "cache_control" in b) for b in system]
    for m in body["messages"]:
        content = m["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        units += [(m["role"] + ":" + (b["text"] if b.get("type") == "text"
                                      else json.dumps(b, sort_keys=True)),
                   "cache_control" in b) for b in blocks]
    return units


def request_usage(body: dict[str, Any], cache: set[bytes] | None = None, *,
                  count: Callable[[str], int] | None = None) -> dict[str, int]:
    """The ``usage`` input fields of one request, counted as the API counts them:
    ``input_tokens`` after the last breakpoint, ``cache_read_input_tokens`` for the
    longest prefix an earlier request wrote (ended at one of its breakpoints),
    ``cache_creation_input_tokens`` from there to this request's last breakpoint.
    The three add up to the request's tokens. ``cache`` (the prefixes written so
    far) is updated; None counts everything as uncached. Tokens are the fake's
    characters / 3.5, or with ``count`` the sum of ``count`` over the request's
    blocks (bench/cost.py counts with tiktoken)."""
    units = _units(body)
    chars, digests, last_bp = [0], [], -1
    h = hashlib.sha256()
    for i, (text, bp) in enumerate(units):
        h.update(text.encode("utf-8", "surrogatepass") + b"\x00")
        digests.append(h.digest())
        chars.append(chars[-1] + (len(text) if count is None else count(text)))
        last_bp = i if bp else last_bp
    if count is not None:  # chars holds token sums already
        return _split_usage(chars, digests, units, last_bp, cache, lambda n: n)
    return _split_usage(chars, digests, units, last_bp, cache, fake_tokens)


def _split_usage(chars: list[int], digests: list[bytes], units: list[tuple[str, bool]],
                 last_bp: int, cache: set[bytes] | None,
                 tokens: Callable[[int], int]) -> dict[str, int]:
    total = tokens(chars[-1])
    if cache is None or last_bp < 0:
        return {"input_tokens": total, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0}
    hit = max((i for i in range(last_bp + 1) if digests[i] in cache), default=-1)
    cache.update(digests[i] for i, (_, bp) in enumerate(units) if bp)
    read, upto = tokens(chars[hit + 1]), tokens(chars[last_bp + 1])
    return {"input_tokens": total - upto, "cache_creation_input_tokens": upto - read,
            "cache_read_input_tokens": read}


class FakeAnthropic:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._script: deque[Reply] = deque()
        self._always: Reply | None = None
        self._lock = threading.Lock()
        self.delay = 0.0
        self.trickle_s = 0.0  # trickle(): seconds between the bytes of every answer
        self.trickles_finished = 0  # trickled answers sent to their last byte
        self._generation = 0  # bumped by reset(): a trickle in progress stops
        self.calls_started = threading.Event()
        self._gate: Gate | None = None
        # lose_specifics(): the share of specifics dropped from default answers.
        self.lossy_fraction = 0.0
        self.lossy_seed = 0
        self._cache: set[bytes] = set()  # request prefixes written to the "prompt cache"
        self.weak: Weak | None = None  # act_weak(): answer like a small model
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
            self.trickle_s, self.trickles_finished = 0.0, 0
            self._generation += 1
            self.lossy_fraction, self.lossy_seed = 0.0, 0
            self.calls_started.clear()
            self._cache.clear()
            self.weak = None
            gate, self._gate = self._gate, None
        if gate is not None:
            gate.release()  # never leave a handler thread parked across tests

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def always(self, reply: Reply | None) -> None:
        with self._lock:
            self._always = reply

    def lose_specifics(self, fraction: float, *, seed: int = 0) -> None:
        """Lossy mode: default answers (summaries, facts, repairs) drop ``fraction`` of
        their specifics, deterministically by ``seed`` (see drop_specifics)."""
        with self._lock:
            self.lossy_fraction, self.lossy_seed = fraction, seed

    def act_weak(self, weak: Weak | None) -> None:
        """Answer unscripted calls like a weak model (worker.testing.weak.Weak: echo
        the schema, loop facts to the cap, replace memories with junk, a given
        title); None: behave again."""
        with self._lock:
            self.weak = weak

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

            trickle = 0.0  # this request's seconds between bytes (see trickle())

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

            def _trickle(self, data: bytes) -> None:
                generation = fake._generation
                if send_trickled(self.wfile.write, data, self.trickle,
                                 stopped=lambda: fake._generation != generation):
                    with fake._lock:
                        fake.trickles_finished += 1
                else:
                    self.close_connection = True

            def do_POST(self) -> None:  # noqa: N802
                self.trickle = 0.0
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
                self.trickle = reply.trickle or fake.trickle_s
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
                kind = "summary"
                if reply.text is not None:
                    text, kind = reply.text, "scripted"
                elif str(body.get("system", "")).startswith("You extract durable facts"):
                    text, kind = default_facts(prompt_text), "facts"
                elif "omits these specifics" in prompt_text:
                    text = default_repair(prompt_text, 3 * int(body["max_tokens"]))
                    kind = "repair"
                else:
                    text = default_summary(prompt_text, 3 * int(body["max_tokens"]))
                if fake.lossy_fraction and kind != "scripted":
                    text = drop_specifics(text, fake.lossy_fraction, seed=fake.lossy_seed,
                                          kind=kind)
                weak, cut = fake.weak if kind != "scripted" else None, False
                if weak is not None:
                    text, cut = weaken_text(weak, body, text)
                content: list[dict[str, Any]] = (
                    [{"type": "text", "text": text}] if text != "" else [])
                stop = "max_tokens" if cut else reply.stop_reason
                if body.get("tools"):  # a forced tool: answer with its input
                    data = tool_input(body, prompt_text, reply.text,
                                      fraction=fake.lossy_fraction, seed=fake.lossy_seed)
                    if weak is not None:
                        data, cut = weaken_tool_input(weak, body, prompt_text, data)
                        stop = "max_tokens" if cut else stop
                    content = [{"type": "tool_use", "id": f"toolu_{len(fake.requests)}",
                                "name": body["tools"][0]["name"], "input": data}]
                    text = json.dumps(data)
                    stop = "tool_use" if stop == "end_turn" else stop
                with fake._lock:
                    usage = request_usage(body, fake._cache)
                return self._send(200, {
                    "id": f"msg_{len(fake.requests)}", "type": "message", "role": "assistant",
                    "model": body["model"], "content": content,
                    "stop_reason": stop, "stop_sequence": None,
                    "usage": {**usage, "output_tokens": max(1, len(text) // 4)},
                }, reply.headers)

        return Handler


def _err(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}
