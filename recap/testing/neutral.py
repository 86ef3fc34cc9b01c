"""The stand-in's neutral mode: one summarizing rule for every caller.

A summary that rides on a stand-in which knows one system's prompt and tool
schema flatters that system. In neutral mode (``FakeAnthropic(neutral=True)``,
``python -m recap.testing --neutral``) every default answer follows one rule,
whoever calls and whatever they ask:

- **the messages to summarize** are the ``<message ...>...</message>`` elements
  of the request's text when it has any (a transcript inside one prompt), else
  each turn of the request but the last (the turns, then the ask);
- **the summary** is the lines this stand-in gave before that the request quotes
  back (a previous summary, wherever the caller put it), then the first sentence
  of each other message (at most :data:`SENTENCE_CHARS` characters), one line
  each, written ``- sentence``; the oldest lines are dropped to stay within
  3 characters per ``max_tokens``, as a model stays under max_tokens. A request
  with no message to summarize and no earlier line gets the first sentence of
  its last turn;
- **a forced tool call** gets the schema filled generically: the first required
  string property holds the summary, other required strings are empty, arrays
  empty lists, numbers 0, booleans false, an enum its first value, an object the
  same rule for its required properties. Descriptions and property names are
  never read.

It reads no prompt wording and no property name: whatever a system's retention
depends on must come from its own mechanisms, not from a stand-in that knows
what it wants. Every scan is linear in the request's size.
"""

from __future__ import annotations

import html
import threading
from typing import Any

SENTENCE_CHARS = 200  # a summary line holds at most this much of its message
BULLET = "- "
_OPEN, _CLOSE = "<message", "</message>"


def first_sentence(text: str, limit: int = SENTENCE_CHARS) -> str:
    """The first sentence of ``text``: up to its first line break or the first
    ``.``, ``!`` or ``?`` followed by a space, cut to ``limit`` characters at a word."""
    text = text.strip()
    end = text.find("\n")
    line = text if end < 0 else text[:end]
    for i, ch in enumerate(line[:-1]):
        if ch in ".!?" and line[i + 1] == " ":
            line = line[:i + 1]
            break
    line = " ".join(line.split())
    if len(line) > limit:
        cut = line.rfind(" ", 0, limit)
        line = line[:cut if cut > 0 else limit]
    return line


def elements(text: str) -> list[str]:
    """The inner text of each ``<message ...>...</message>`` element of ``text``
    (unescaped), in order; one pass."""
    out: list[str] = []
    at = 0
    while True:
        start = text.find(_OPEN, at)
        if start < 0:
            return out
        after = start + len(_OPEN)
        if after >= len(text) or text[after] not in " >":  # <messages>, <message_id>...
            at = after
            continue
        head_end = text.find(">", after)
        if head_end < 0:
            return out
        close = text.find(_CLOSE, head_end)
        if close < 0:
            return out
        out.append(html.unescape(text[head_end + 1:close]))
        at = close + len(_CLOSE)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    for b in content or []:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "text":
            out.append(str(b.get("text", "")))
        elif b.get("type") == "tool_result":
            inner = b.get("content")
            out += [inner] if isinstance(inner, str) else _texts(inner)
    return out


class Neutral:
    """The neutral rule, with the lines it gave so far (to know a previous summary
    when a request quotes it back). Thread-safe; :meth:`forget` empties it."""

    def __init__(self) -> None:
        self._said: set[str] = set()
        self._lock = threading.Lock()

    def forget(self) -> None:
        with self._lock:
            self._said.clear()

    def _quoted(self, line: str) -> str | None:
        """``line`` (or its part from the first bullet on) if this stand-in said it."""
        line = html.unescape(line).strip()
        at = line.find(BULLET)
        with self._lock:
            if line in self._said:
                return line
            if at > 0 and line[at:] in self._said:
                return line[at:]
        return None

    def summary(self, body: dict[str, Any]) -> str:
        """The neutral summary answering ``body`` (see the module docstring)."""
        turns = [_texts(m.get("content")) for m in body.get("messages") or []]
        found = [e for t in turns for text in t for e in elements(text)]
        units = found if found else ["\n".join(t) for t in turns[:-1]]
        carried: list[str] = []
        for text in (x for t in turns for x in t):
            for line in text.splitlines():
                said = self._quoted(line)
                if said is not None and said not in carried:
                    carried.append(said)
        lines = list(carried)
        for unit in units:
            if any(self._quoted(ln) is not None for ln in unit.splitlines()):
                continue  # a previous summary: its lines are carried above
            sentence = first_sentence(unit)
            if sentence:
                lines.append(BULLET + sentence)
        if not lines and turns:
            sentence = first_sentence("\n".join(turns[-1]))
            lines = [BULLET + sentence] if sentence else []
        cap = 3 * int(body.get("max_tokens") or 1024)
        while len("\n".join(lines)) > cap and len(lines) > 1:
            lines.pop(0)
        text = "\n".join(lines) or BULLET + "(nothing to summarize)"
        with self._lock:
            self._said.update(lines)
        return text

    def tool_input(self, body: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
        """The input of a forced tool whose ``input_schema`` is ``schema``: filled by
        type alone (see the module docstring)."""
        filled = fill(schema, self.summary(body), first=[True])
        return filled if isinstance(filled, dict) else {}


def fill(schema: Any, summary: str, *, first: list[bool]) -> Any:
    """A value for ``schema`` by type alone: the first required string met gets
    ``summary`` (``first`` records whether it is still to place)."""
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties") or {}
        required = [k for k in schema.get("required") or [] if k in props]
        return {k: fill(props[k], summary, first=first) for k in required}
    if kind == "string":
        if first[0]:
            first[0] = False
            return summary
        return ""
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return None
