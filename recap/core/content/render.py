"""A content array as text: what ``chat_messages.content`` stores for a block
message, and what the summarizer, the memory extractor and search read (pure).

Compact and never binary:

- ``text`` as is;
- ``tool_use`` as ``[tool call NAME (ID): {"arg": ...}]``, each argument value cut
  to ARG_CHARS and the whole call to CALL_CHARS, with a note saying so;
- ``tool_result`` as ``[tool result for ID (error): ...]``, its text cut to its
  first and last RESULT_CHARS/2 characters with a note of what was left out;
- ``thinking`` as ``[thinking: N characters]`` (the reasoning itself is replayed
  from the stored blocks where the API needs it, never summarized);
- images and documents as ``[image: image/png, 800x600, 12 KB]``; a plain-text
  document's text is kept, cut like a tool result.

Token counts use :attr:`Digest.countable` (everything a request can carry:
full texts, tool inputs, thinking) plus :attr:`Digest.media_tokens`, so a cut
never makes the budget lie.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from recap.core.content import media

ARG_CHARS = 300
CALL_CHARS = 1_000
RESULT_CHARS = 2_000


@dataclass(frozen=True)
class Digest:
    text: str  # the rendering stored in ``content``
    countable: str  # what token counting reads
    media_tokens: int  # images and PDFs, by the API's estimates
    calls: tuple[str, ...]  # tool_use ids this message makes
    answers: tuple[str, ...]  # tool_use ids its tool_results answer


def cut(text: str, limit: int, what: str) -> str:
    """``text`` cut to its first and last ``limit/2`` characters, with a note."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return (f"{text[:half]}\n[... {len(text) - 2 * half} characters of this {what} left "
            f"out ...]\n{text[-half:]}")


def _args(args: dict[str, Any]) -> str:
    shown = {k: (cut(v, ARG_CHARS, "argument") if isinstance(v, str) else v)
             for k, v in args.items()}
    return cut(json.dumps(shown, ensure_ascii=False, default=str), CALL_CHARS, "call")


class _Walker:
    def __init__(self, *, whole: bool = False) -> None:
        self.countable: list[str] = []
        self.media_tokens = 0
        self.whole = whole  # nothing cut (full_text)

    def cut(self, text: str, limit: int, what: str) -> str:
        return text if self.whole else cut(text, limit, what)

    def source(self, block: dict[str, Any], where: str) -> str:
        source = block["source"]
        raw = media.decode(source, where) if source.get("type") == "base64" else None
        image = block["type"] == "image"
        self.media_tokens += media.source_tokens(source, raw, image=image)
        label = "image" if image else "document"
        title = f' "{block["title"]}"' if block.get("title") else ""
        shown = f"[{label}{title}: {media.describe(source, raw)}]"
        if source.get("type") == "text":
            self.countable.append(source["data"])
            return f"{shown}\n{self.cut(source['data'], RESULT_CHARS, 'document')}"
        if source.get("type") == "content":
            inner = source["content"]
            if isinstance(inner, str):
                self.countable.append(inner)
                return f"{shown}\n{self.cut(inner, RESULT_CHARS, 'document')}"
            return "\n".join([shown, *(self.block(b, f"{where}.source.content[{j}]")
                                       for j, b in enumerate(inner))])
        return shown

    def block(self, b: dict[str, Any], where: str) -> str:
        kind = b["type"]
        if kind == "text":
            self.countable.append(b["text"])
            return str(b["text"])
        if kind in ("image", "document"):
            return self.source(b, where)
        if kind == "tool_use":
            self.countable.append(f'{b["name"]} {json.dumps(b["input"], ensure_ascii=False)}')
            args = (json.dumps(b["input"], ensure_ascii=False, default=str) if self.whole
                    else _args(b["input"]))
            return f"[tool call {b['name']} ({b['id']}): {args}]"
        if kind == "tool_result":
            inner = b.get("content")
            if isinstance(inner, list):
                body = "\n".join(self.block(x, f"{where}.content[{j}]")
                                 for j, x in enumerate(inner))
            else:
                body = inner or ""
                self.countable.append(body)
            error = ", error" if b.get("is_error") else ""
            return (f"[tool result for {b['tool_use_id']}{error}: "
                    f"{self.cut(body, RESULT_CHARS, 'tool result') or '(empty)'}]")
        if kind == "thinking":
            self.countable.append(b["thinking"])
            return f"[thinking: {len(b['thinking'])} characters]"
        if kind == "redacted_thinking":
            self.countable.append(b["data"])
            return "[redacted thinking]"
        raise ValueError(f"unknown block type {kind!r}")  # validate_blocks refused it


def digest(blocks: list[dict[str, Any]]) -> Digest:
    """The text, token material and tool ids of validated ``blocks`` (see
    :func:`recap.core.content.blocks.validate_blocks`). Raises InvalidInput for base64
    data that is not base64 or not its declared media type."""
    w = _Walker()
    text = "\n".join(w.block(b, f"content[{i}] ({b['type']})") for i, b in enumerate(blocks))
    return Digest(text, "\n".join(w.countable), w.media_tokens,
                  tuple(b["id"] for b in blocks if b["type"] == "tool_use"),
                  tuple(b["tool_use_id"] for b in blocks if b["type"] == "tool_result"))


def full_text(blocks: list[dict[str, Any]]) -> str:
    """The rendering of stored ``blocks`` with nothing cut: every line of every tool
    call, tool result and text document. What the summarizer and the retention
    guard read of a message before it is condensed (the stored ``content`` is cut
    to stay cheap to search and show). Media sources are described, not decoded."""
    w = _Walker(whole=True)
    return "\n".join(w.block(b, f"content[{i}] ({b['type']})") for i, b in enumerate(blocks))


def links_text(calls: tuple[str, ...], answers: tuple[str, ...]) -> str | None:
    """The ``tool_links`` column: ``"call:ID result:ID ..."`` (ids hold no spaces),
    or None for a message without tool blocks."""
    parts = [f"call:{c}" for c in calls] + [f"result:{a}" for a in answers]
    return " ".join(parts) or None


def parse_links(text: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(calls, answers) from a ``tool_links`` value."""
    calls: list[str] = []
    answers: list[str] = []
    for part in (text or "").split():
        kind, _, ident = part.partition(":")
        (calls if kind == "call" else answers).append(ident)
    return tuple(calls), tuple(answers)
