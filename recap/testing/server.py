"""FakeAnthropic: a local HTTP server that speaks the Anthropic Messages API.

The real SDK is pointed at it with ``base_url``. Each valid request is answered by
the first that applies of: the routes a test set (:meth:`FakeAnthropic.route`), for
a request that is not Recap's own the assistant queue (:meth:`~FakeAnthropic.assistant`),
the script (:meth:`~FakeAnthropic.script`), the standing reply
(:meth:`~FakeAnthropic.always`), the default answer (recap.testing.recap): a forced
tool's input, else text. ``"stream": true`` gets the answer as the API's event stream
(recap.testing.stream); ``/v1/chat/completions`` is the OpenAI-compatible route
(recap.testing.chat_completions). Every request is validated as the API
does (recap.testing.validate) and recorded for assertions.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Sequence
from typing import Any

from recap.testing.gate import Gate
from recap.testing.handler import Server, handler
from recap.testing.neutral import Neutral
from recap.testing.recap import answer, recap_kind
from recap.testing.replies import Reply, Request, Route
from recap.testing.usage import request_usage


class FakeAnthropic:
    """The Messages API stand-in: ``FakeAnthropic().start()``, then ``.url``.

    ``routes``: standing routes, consulted after the test's own (:meth:`route`) and
    kept by :meth:`reset` (a double that answers other clients' prompts, a fault
    injector). ``log_errors=False`` keeps the server quiet about clients that drop
    their connections (tests that kill workers on purpose). ``neutral=True``: every
    default answer follows one rule for every caller, blind to prompts and tool
    schemas (recap.testing.neutral); the ``neutral`` attribute switches it later.
    """

    def __init__(self, *, routes: Sequence[Route] = (), log_errors: bool = True,
                 port: int = 0, neutral: bool = False) -> None:
        self.requests: list[dict[str, Any]] = []
        # Each answered request with the message it got, in the order answered
        # (a fault or an error is not an answer: the API bills neither).
        self.answers: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.headers: list[dict[str, str]] = []
        self.delay = 0.0  # seconds before every answer (a slow API)
        self.trickle_s = 0.0  # trickle(): seconds between the bytes of every answer
        self.trickles_finished = 0  # trickled answers sent to their last byte
        self.generation = 0  # bumped by reset(): a trickle in progress stops
        self.calls_started = threading.Event()
        # lose_specifics(): the share of specifics dropped from default answers.
        self.lossy_fraction = 0.0
        self.lossy_seed = 0
        self.neutral = neutral  # default answers by the neutral rule (kept by reset())
        self._neutral = Neutral()
        self._script: deque[Reply] = deque()
        self._always: Reply | None = None
        self._routes: list[Route] = []
        self._standing = tuple(routes)
        self._lock = threading.Lock()
        self._gate: Gate | None = None
        self._cache: set[bytes] = set()  # request prefixes written to the "prompt cache"
        self._assistant: deque[Reply] = deque()
        # count_tokens(): its tokenizer's count per the fake's usual one; None: the
        # route answers 404, as a server without it does.
        self.token_ratio: float | None = 1.0
        self.counted: list[dict[str, Any]] = []  # the count_tokens bodies
        self._counts: deque[Reply] = deque()  # counts(): the next count_tokens answers
        self._server = Server(("127.0.0.1", port), handler(self))  # 0: any free port
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
        """Forget requests, answers, script, routes, delay, lossy mode, the prompt cache and
        the neutral rule's earlier lines (the mode stays); release a held call."""
        with self._lock:
            self.requests.clear()
            self.answers.clear()
            self.headers.clear()
            self._script.clear()
            self._assistant.clear()
            self._always = None
            self._routes.clear()
            self.delay = 0.0
            self.trickle_s, self.trickles_finished = 0.0, 0
            self.generation += 1
            self.lossy_fraction, self.lossy_seed = 0.0, 0
            self.calls_started.clear()
            self._cache.clear()
            self.token_ratio = 1.0
            self.counted.clear()
            self._counts.clear()
            self._neutral.forget()
            gate, self._gate = self._gate, None
        if gate is not None:
            gate.release()  # never leave a handler thread parked across tests

    def script(self, *replies: Reply) -> None:
        """Answer the next calls with ``replies``, in order (after any route)."""
        with self._lock:
            self._script.extend(replies)

    def assistant(self, *replies: Reply) -> None:
        """Answer the next calls that are not Recap's own (an agent's, a chat app's:
        no forced tool, not a summary, repair or title call) with ``replies``, in
        order: the scripted assistant (``tool_call(...)``, ``ok("text")``). Recap's
        jobs never take them. Once they are used up, such calls get the script,
        ``always`` or a plain text answer: never the same tool call forever."""
        with self._lock:
            self._assistant.extend(replies)

    def always(self, reply: Reply | None) -> None:
        """Answer every call the routes, the assistant queue and the script leave with
        ``reply`` (None: defaults)."""
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

    def count_tokens(self, ratio: float | None = 1.0) -> None:
        """Answer ``POST /v1/messages/count_tokens`` as a model whose tokenizer counts
        ``ratio`` times the fake's own count (recap.testing.usage, the count its
        ``usage`` reports; 1 until set, and after :meth:`reset`): above 1, a model that
        counts more tokens than Recap's estimate assumes. None: the route answers 404,
        as a server without ``count_tokens`` does."""
        if ratio is not None and not ratio > 0:
            raise ValueError(f"count_tokens: the ratio must be positive, got {ratio}")
        with self._lock:
            self.token_ratio = ratio

    def counts(self, *replies: Reply) -> None:
        """Answer the next valid ``count_tokens`` calls with ``replies``, in order, then
        as :meth:`count_tokens` says: ``count(10**15)`` (recap.testing.replies.count)
        says that count, sent as given; ``ok(trickle=0.05)`` the fake's own count a
        byte every 50 ms; ``error(529)``, ``Reply("hang")``, ``Reply("reset")``,
        ``Reply("malformed")`` as for ``/v1/messages``. Routes, the script and
        ``always`` answer ``/v1/messages`` only."""
        with self._lock:
            self._counts.extend(replies)

    def count_reply(self) -> Reply:
        """The reply the next valid count_tokens call gets (:meth:`counts`)."""
        with self._lock:
            return self._counts.popleft() if self._counts else Reply()

    def model_tokens(self, body: dict[str, Any]) -> int:
        """The input tokens of ``body`` by the tokenizer :meth:`count_tokens` set
        (its ratio times the fake's own count; 1 when none is set)."""
        ratio = self.token_ratio or 1.0
        return math.ceil(ratio * request_usage(body)["input_tokens"])

    def trickle(self, seconds_per_byte: float) -> None:
        """Send every answer one byte every ``seconds_per_byte`` (0: off), status
        line and headers included, as a slow or hostile server or proxy does: no
        single read waits long, so only a total deadline ends the call. A reply's
        own ``trickle`` wins; ``trickles_finished`` counts answers sent whole;
        ``reset()`` stops a trickle in progress."""
        with self._lock:
            self.trickle_s = seconds_per_byte

    def count_trickle_finished(self) -> None:
        """One more trickled answer sent to its last byte (``trickles_finished``)."""
        with self._lock:
            self.trickles_finished += 1

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
        """The reply the fake gives ``request``: routes, assistant queue (for a call
        that is not Recap's own), script, always, default."""
        with self._lock:
            routes = [*self._routes, *self._standing]
        for fn in routes:
            reply = fn(request)
            if reply is not None:
                return reply
        theirs = request.tool is None and recap_kind(request.body) is None
        with self._lock:
            if theirs and self._assistant:
                return self._assistant.popleft()
            if self._script:
                return self._script.popleft()
            return self._always or Reply()

    # -- one call --------------------------------------------------------------
    def record(self, body: Any, headers: dict[str, str]) -> int:
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

    def message(self, request: Request, reply: Reply, number: int) -> dict[str, Any]:
        with self._lock:
            fraction, seed = self.lossy_fraction, self.lossy_seed
        content, text, stop = answer(request, reply, number=number,
                                     fraction=0.0 if reply.text is not None else fraction,
                                     seed=seed, neutral=self._neutral if self.neutral else None)
        with self._lock:
            usage = request_usage(request.body, self._cache)
        message = {"id": f"msg_{number}", "type": "message", "role": "assistant",
                   "model": request.body["model"], "content": content, "stop_reason": stop,
                   "stop_sequence": None,
                   "usage": {**usage, "output_tokens": max(1, len(text) // 4)}}
        with self._lock:
            self.answers.append((request.body, message))
        return message
