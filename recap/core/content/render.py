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
  document's text is kept, cut like a tool result;
- what Claude's server tools return, never their encrypted payloads or
  signatures: a server tool call like a tool call; web search results as their
  titles and urls; a fetched page as its url, title and text (cut); a code
  execution result as its return code and the last TAIL_CHARS of its stdout and
  stderr; an MCP call as ``[MCP tool call SERVER/NAME (ID): ...]`` and its result
  like a tool result; a ``compaction`` as its visible summary (cut); a
  ``search_result`` as its title, source and text (cut); a block of a type not
  known here as ``[TYPE block]``.

Token counts use :attr:`Digest.countable` (everything a request can carry:
full texts, tool inputs, thinking) plus :attr:`Digest.media_tokens`, so a cut
never makes the budget lie.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from recap.core.content import media
from recap.core.content.blocks import ANSWER_IDS, CALL_IDS, SERVER_RESULTS

ARG_CHARS = 300
CALL_CHARS = 1_000
RESULT_CHARS = 2_000
# The end of a code execution's stdout and stderr, where its outcome usually is.
TAIL_CHARS = 1_000
# Web search results shown by title and url, and citations' sources listed.
LIST_ITEMS = 10


@dataclass(frozen=True)
class Digest:
    text: str  # the rendering stored in ``content``
    countable: str  # what token counting reads
    media_tokens: int  # images and PDFs, by the API's estimates
    calls: tuple[str, ...]  # the ids of the calls this message makes (tools, server tools, MCP)
    answers: tuple[str, ...]  # the call ids its results answer


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
            if b.get("citations"):
                self.countable.append(json.dumps(b["citations"], ensure_ascii=False))
            return str(b["text"]) + _cited(b.get("citations"))
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
        return self.server_block(b, where)

    def server_block(self, b: dict[str, Any], where: str) -> str:
        """The blocks of server tools, search results, compaction and unknown types:
        all of the block is counted (it is sent back as it is), a short text shown."""
        kind = str(b["type"])
        self.countable.append(json.dumps(b, ensure_ascii=False, default=str))
        if kind in ("server_tool_use", "mcp_tool_use"):
            args = (json.dumps(b["input"], ensure_ascii=False, default=str) if self.whole
                    else _args(b["input"]))
            if kind == "mcp_tool_use":
                return f"[MCP tool call {b['server_name']}/{b['name']} ({b['id']}): {args}]"
            return f"[server tool call {b['name']} ({b['id']}): {args}]"
        if kind == "mcp_tool_result":
            inner = b.get("content")
            body = (inner or "") if not isinstance(inner, list) else "\n".join(
                str(x.get("text", "")) for x in inner)
            error = ", error" if b.get("is_error") else ""
            return (f"[MCP tool result for {b['tool_use_id']}{error}: "
                    f"{self.cut(body, RESULT_CHARS, 'tool result') or '(empty)'}]")
        if kind in SERVER_RESULTS:
            return (f"[{kind.removesuffix('_tool_result').replace('_', ' ')} result for "
                    f"{b['tool_use_id']}: {self.server_output(b['content'])}]")
        if kind == "compaction":
            summary = b.get("content")
            if not isinstance(summary, str):
                return "[compaction: no summary]"
            return f"[compaction summary: {self.cut(summary, RESULT_CHARS, 'summary')}]"
        if kind == "search_result":
            body = "\n".join(str(x.get("text", "")) for x in b["content"])
            return (f'[search result "{b["title"]}" ({b["source"]}): '
                    f"{self.cut(body, RESULT_CHARS, 'search result')}]")
        if kind == "container_upload":
            return f"[container upload: file {b['file_id']}]"
        return f"[{kind[:100]} block]"

    def server_output(self, content: Any) -> str:
        """A server tool's ``content``: its error code, or what its result shows."""
        if isinstance(content, list):  # web search results
            shown = [f'{r.get("title", "")} <{r.get("url", "")}>' for r in content[:LIST_ITEMS]
                     if isinstance(r, dict)]
            more = f"; and {len(content) - LIST_ITEMS} more" if len(content) > LIST_ITEMS else ""
            return "; ".join(shown) + more if shown else "no results"
        if not isinstance(content, dict):
            return "(empty)"
        if "error_code" in content:
            return f"error {content['error_code']}"
        outline = ", ".join(_outline(content)) or str(content.get("type", "(empty)"))
        return outline + "".join(f"\n{part}" for part in self.output_text(content))

    def output_text(self, content: dict[str, Any]) -> list[str]:
        """The text a server tool's result shows: a fetched page's or a viewed
        file's (cut), a code execution's stdout and stderr (their ends)."""
        out: list[str] = []
        document = content.get("content")
        source = document.get("source") if isinstance(document, dict) else None
        if isinstance(source, dict) and source.get("type") == "text" \
                and isinstance(source.get("data"), str):  # a fetched page
            out.append(self.cut(source["data"], RESULT_CHARS, "page"))
        elif isinstance(document, str):  # a file the text editor viewed
            out.append(self.cut(document, RESULT_CHARS, "file"))
        for stream in ("stdout", "stderr"):
            text = content.get(stream)
            if isinstance(text, str) and text.strip():
                out.append(f"{stream}: " + (text if self.whole else _tail(text)).rstrip())
        return out


def _outline(content: dict[str, Any]) -> list[str]:
    """The short facts of a server tool's result: url, file type, return code,
    page title, tools found."""
    out: list[str] = []
    if isinstance(content.get("url"), str):
        out.append(content["url"])
    if isinstance(content.get("file_type"), str):
        out.append(f"{content['file_type']} file")
    if isinstance(content.get("return_code"), int):
        out.append(f"return code {content['return_code']}")
    document = content.get("content")
    if isinstance(document, dict) and isinstance(document.get("title"), str):
        out.append(f'"{document["title"]}"')
    if "encrypted_stdout" in content:
        out.append("stdout encrypted")
    tools = content.get("tool_references")
    if isinstance(tools, list):
        out.append("tools " + ", ".join(str(t.get("tool_name", "")) for t in tools
                                         if isinstance(t, dict)))
    return out


def _cited(citations: Any) -> str:
    """`` [cited: TITLE <URL>, ...]`` for a text block's citations (their sources,
    each once), or nothing."""
    if not isinstance(citations, list):
        return ""
    sources: list[str] = []
    for c in citations:
        if not isinstance(c, dict):
            continue
        title = c.get("title") or c.get("document_title") or ""
        where = f" <{c['url']}>" if isinstance(c.get("url"), str) else ""
        shown = f"{title}{where}".strip()
        if shown and shown not in sources:
            sources.append(shown)
    more = f", and {len(sources) - LIST_ITEMS} more" if len(sources) > LIST_ITEMS else ""
    return f" [cited: {', '.join(sources[:LIST_ITEMS])}{more}]" if sources else ""


def _tail(text: str) -> str:
    """The last TAIL_CHARS of ``text``, with a note of what was left out before."""
    if len(text) <= TAIL_CHARS:
        return text
    return f"[... {len(text) - TAIL_CHARS} characters left out ...]\n{text[-TAIL_CHARS:]}"


def _calls(blocks: list[dict[str, Any]]) -> tuple[str, ...]:
    return tuple(b[CALL_IDS[b["type"]]] for b in blocks if b["type"] in CALL_IDS)


def _answers(blocks: list[dict[str, Any]]) -> tuple[str, ...]:
    return tuple(b[ANSWER_IDS[b["type"]]] for b in blocks if b["type"] in ANSWER_IDS)


def digest(blocks: list[dict[str, Any]]) -> Digest:
    """The text, token material and tool ids of validated ``blocks`` (see
    :func:`recap.core.content.blocks.validate_blocks`). Raises InvalidInput for base64
    data that is not base64 or not its declared media type."""
    w = _Walker()
    text = "\n".join(w.block(b, f"content[{i}] ({b['type']})") for i, b in enumerate(blocks))
    return Digest(text, "\n".join(w.countable), w.media_tokens, _calls(blocks),
                  _answers(blocks))


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
