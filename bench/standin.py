"""The Claude stand-in for benchmarks: tests/fake_anthropic.py plus fair peer replies.

The test server answers Recap's prompt with a deterministic digest (previous
summary + the first 12 words of each message, cut to 3 * max_tokens characters,
as a model stays under max_tokens). It cannot parse the peers' prompts, so it
would answer them with a one-line summary and flatter them. Here every request
that is not Recap-shaped gets the same digest of its own messages, so all
systems carry summaries of the same size. Token accounting is ours too (tiktoken
over every text block), so all systems are counted by the tokenizer Recap uses;
the fake's own ``usage`` counts characters / 3.5.
"""

from __future__ import annotations

import html
import io
import json
import re
from typing import Any

from tests.fake_anthropic import FakeAnthropic, ok, validate_messages_request

_RECAP_MARK = '<message role="'
_LANGMEM_PREVIOUS = re.compile(
    r"This is summary of the conversation so far: (.*?)\n\nExtend this summary", re.S)
_LANGMEM_ASKS = ("Create a summary of the conversation above:", "This is summary of the "
                 "conversation so far:")
_LC_MESSAGES = re.compile(r'<message type="(\w+)">(.*?)</message>', re.S)
_LC_PREVIOUS = "Here is a summary of the conversation to date:\n\n"


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]


def peer_digest(body: dict[str, Any]) -> str:
    """The digest the stand-in gives Recap, computed from a peer's request."""
    previous = ""
    lines: list[str] = []
    for m in body["messages"]:
        for text in _texts(m["content"]):
            found = _LC_MESSAGES.findall(text)
            if found:  # LangChain middleware: one prompt holding an XML transcript
                for kind, inner in found:
                    inner = html.unescape(inner)
                    if inner.startswith(_LC_PREVIOUS):
                        previous = inner[len(_LC_PREVIOUS):]
                        continue
                    role = {"human": "user", "ai": "assistant"}.get(kind, kind)
                    lines.append(f"The {role} said: {' '.join(inner.split()[:12])}")
                continue
            prev = _LANGMEM_PREVIOUS.search(text)
            if prev:
                previous = prev.group(1).strip()
            if text.startswith(_LANGMEM_ASKS):
                continue
            lines.append(f"The {m['role']} said: {' '.join(text.split()[:12])}")
    out = "\n".join(([previous] if previous else []) + lines) or "The conversation was empty."
    cap = 3 * int(body.get("max_tokens", 1024))
    while len(out) > cap and "\n" in out:
        out = out.split("\n", 1)[1]
    return out


def request_tokens(body: dict[str, Any], count: Any) -> int:
    """Input tokens of one request: system + every text block (no per-message overhead)."""
    system = body.get("system") or ""
    total = sum(count(t) for t in _texts(system)) if system else 0
    for m in body["messages"]:
        total += sum(count(t) for t in _texts(m["content"]))
    return total


def recap_kind(body: dict[str, Any]) -> str | None:
    """"summary" (with memories on, the same call mines them), "repair" or "title" for
    Recap's own requests (by system prompt); else None."""
    from worker.core import prompt, titles

    system = "".join(_texts(body.get("system") or ""))
    msgs = body.get("messages") or []
    if system.startswith(prompt.SYSTEM_PROMPT[:40]) and msgs and any(
            "omits these specifics" in t for t in _texts(msgs[0].get("content", ""))):
        return "repair"  # the retention guard's repair call
    for kind, known in (("summary", prompt.SYSTEM_PROMPT), ("title", titles.TITLE_SYSTEM)):
        if system.startswith(known[:40]):
            return kind
    if len(msgs) == 1 and any(_RECAP_MARK in t for t in _texts(msgs[0].get("content", ""))):
        return "summary"
    return None


def is_recap_request(body: dict[str, Any]) -> bool:
    return recap_kind(body) is not None


class BenchFake(FakeAnthropic):
    """FakeAnthropic that answers peer prompts with the same digest Recap gets.

    Peer requests are scripted one at a time, so peers must run sequentially;
    Recap's requests pass through untouched and may be concurrent.
    """

    def _handler(self) -> type:
        base = super()._handler()
        fake = self

        class Handler(base):  # type: ignore[misc,valid-type]
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length", 0))
                raw: bytes = getattr(self, "rfile").read(length)  # noqa: B009
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                if (isinstance(body, dict) and validate_messages_request(body) is None
                        and not is_recap_request(body)):
                    fake.script(ok(peer_digest(body)))
                # The base handler reads the body from rfile: hand it the bytes we read.
                original: Any = getattr(self, "rfile")  # noqa: B009
                setattr(self, "rfile", io.BytesIO(raw))  # noqa: B010
                try:
                    super().do_POST()
                finally:
                    setattr(self, "rfile", original)  # noqa: B010

        return Handler
