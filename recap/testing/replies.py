"""What a test hands the fake and what the fake hands a route: :class:`Reply`
(one scripted answer or fault, built with :func:`ok` and :func:`error`) and
:class:`Request` (one validated request, as a route sees it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

ReplyKind = Literal["ok", "error", "reset", "hang", "malformed"]


@dataclass
class Reply:
    """One answer. ``kind``: ok (``text`` or the default answer), error (``status``,
    ``error_type``, ``message``), reset (the connection drops mid-body), hang (no
    answer: the client's timeout fires), malformed (a body that is not JSON)."""

    kind: ReplyKind = "ok"
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
    # Tool calls the answer makes, each {"name": ..., "input": {...}} (tool_call()):
    # an assistant's turn that calls tools, after its ``text`` if any.
    calls: list[dict[str, Any]] = field(default_factory=list)
    # A count_tokens answer's ``input_tokens``, sent as given, any JSON value (count()):
    # None answers the fake's own count of the request.
    input_tokens: Any = None


def ok(text: str | None = None, **kw: Any) -> Reply:
    """A 200 answer: ``text`` (for a forced tool, its JSON input), or None for the
    default answer. ``stop_reason``, ``headers``, ``delay`` and ``trickle`` as in
    :class:`Reply`."""
    return Reply("ok", text=text, **kw)


def count(input_tokens: Any, **kw: Any) -> Reply:
    """A 200 count_tokens answer saying ``input_tokens``, sent as given (a huge, negative,
    fractional or non-numeric value, as a broken server or proxy sends);
    ``delay`` and ``trickle`` as in :class:`Reply`. See FakeAnthropic.counts."""
    return Reply("ok", input_tokens=input_tokens, **kw)


def tool_call(name: str, input: dict[str, Any] | None = None, *, text: str | None = None,
              **kw: Any) -> Reply:
    """A 200 answer calling tool ``name`` with ``input`` (after ``text``, if any), as an
    assistant does: stop_reason "tool_use". Several calls in one turn:
    ``Reply(calls=[{"name": ..., "input": ...}, ...], stop_reason="tool_use")``."""
    return Reply("ok", text=text, stop_reason="tool_use",
                 calls=[{"name": name, "input": dict(input or {})}], **kw)


_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                429: "rate_limit_error", 500: "api_error", 503: "api_error",
                529: "overloaded_error"}


def error(status: int, message: str = "scripted failure", *, error_type: str | None = None,
          headers: dict[str, str] | None = None) -> Reply:
    """An API error answer; ``error_type`` defaults to the one the API sends for ``status``."""
    return Reply("error", status=status, message=message,
                 error_type=error_type or _ERROR_TYPES.get(status, "api_error"),
                 headers=headers or {})


def texts(content: Any) -> list[str]:
    """The text of a ``system`` or message ``content`` value (a string or blocks)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [str(b.get("text", "")) for b in content
            if isinstance(b, dict) and b.get("type") == "text"]


@dataclass(frozen=True)
class Request:
    """One valid request to the fake, as a route (:meth:`FakeAnthropic.route`) sees it."""

    body: dict[str, Any]
    raw: bytes
    headers: dict[str, str]

    @property
    def tool(self) -> str | None:
        """The name of the tool the request forces (``tool_choice``), or None."""
        choice = self.body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") == "tool":
            return str(choice.get("name"))
        return None

    @property
    def system(self) -> str:
        """The system prompt's text ("" without one)."""
        return "".join(texts(self.body.get("system") or ""))

    @property
    def prompt(self) -> str:
        """The first message's text (Recap sends one user message per call)."""
        return "".join(texts(self.body["messages"][0].get("content", "")))

    @property
    def last_user_text(self) -> str:
        """The text of the final message when it is a user turn, else ""."""
        last = self.body["messages"][-1]
        return "".join(texts(last.get("content", ""))) if last.get("role") == "user" else ""

    @property
    def max_tokens(self) -> int:
        return int(self.body["max_tokens"])

    def mentions(self, marker: str) -> bool:
        """Whether ``marker`` appears in the request as sent (JSON-escaped text)."""
        return marker.encode() in self.raw or json.dumps(marker)[1:-1].encode() in self.raw


# A route answers the requests it recognises and returns None for the others.
Route = Callable[[Request], Reply | None]
