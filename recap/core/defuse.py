"""Text Recap did not write can neither open, close nor forge Recap's blocks (pure).

Recap's own blocks (the summary, its details section, the memories, recall, the
stub a cleared tool result leaves) are marked by their tags, their headers and
their entries (one line each). Any other text that reaches a model next to them
(a message of the window, a recalled line, a stored summary or fact the model
wrote) is read here as a model reads it: NFKC (full-width letters), look-alike
letters (recap.core.text.CONFUSABLES), any case, and any white space,
punctuation or Markdown between the letters (``**Details (kept verbatim by
Recap)**``, ``W.h.a.t you know``). What reads as one of Recap's tags
(recap.core.text.RECAP_TAGS), block headers (:data:`HEADER_PHRASES`) or recall
labels (``[user · message 12``) is defused: its first character is written as an
HTML character reference (``<`` becomes ``&lt;``, ``W`` becomes ``&#87;``), so
the text stays readable and can never equal Recap's own. Inside an entry, every
Unicode line break (``\\r``, U+2028, U+2029, U+0085, vertical tab, form feed...)
is escaped, so an entry cannot start a forged entry on a line of its own.

Every scan here runs in time linear in its input: a gap is possessive, a label
is looked for at most :data:`LABEL_REACH` characters after its ``[``.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Collection
from typing import Any

from recap.core.text import CONFUSABLES, DROP_INVISIBLE, defuse_all

# The line breaks a model (and str.splitlines) reads: "\r\n" counts as one.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

# The words of every header Recap writes above or inside its blocks
# (recap.core.memories.block, recap.core.context.assemble, recap.core.context.lookback,
# recap.core.retention.details) and of the stub it leaves for a cleared tool result
# (recap.core.retention.stubs); tests/core/test_blocks_forgery.py checks that each
# header Recap writes is matched.
HEADER_PHRASES = (
    "what you know about the user",
    "kept verbatim from earlier in this conversation",
    "from documents and text pasted earlier",
    "from the assistant's earlier replies",
    "noted by a model from earlier in this conversation",
    "from earlier tool results",
    "the conversation so far summarized",
    "lines quoted verbatim from earlier in this conversation",
    "details kept verbatim by recap",
    "tool output cleared by recap",
)
# How the stub Recap leaves for a cleared tool result opens
# (recap.core.retention.stubs); only Recap's own stubs keep it in a request.
STUB_OPEN = "[tool output cleared by Recap: "
# Anything but a letter or a digit may sit between two letters of a phrase:
# white space, punctuation, Markdown marks, invisible characters. Possessive.
_GAP = r"[\W_]*+"
# A recall label: "[", a few characters, a separator, then "message" (or "msg").
LABEL_REACH = 40
# Its gaps are bounded: "[" is itself a gap character, so an unbounded gap would
# let every "[" of a run rescan the rest of it.
_SHORT_GAP = r"[\W_]{0,4}+"
_LABEL = (r"\[[^\[\]\n]{0," + str(LABEL_REACH) + r"}?[·•∙⋅|,:\-–—]" + _SHORT_GAP
          + _SHORT_GAP.join("message"))


def _spelled(phrase: str) -> str:
    letters = [c for c in phrase if c.isalnum()]
    return _GAP.join(map(re.escape, letters))


_HEADERS = re.compile("|".join([*map(_spelled, HEADER_PHRASES), _LABEL]), re.IGNORECASE)
# The same phrases, only where a line starts (after Markdown or bullets): the
# details header a model copies into its answer, however it dresses it.
_DETAILS_LINE = re.compile(r"^[\W_]*+" + _spelled("details kept verbatim by recap"),
                           re.IGNORECASE)


def _reads(text: str) -> str:
    """``text`` as :func:`_view` reads it, for detection only (indexes may move):
    compatibility forms decomposed (full-width letters, ligatures), accents split
    off (a gap, as any mark), look-alike letters mapped, invisible characters
    dropped."""
    # Look-alikes are mapped before and after: NFKD maps some of them to letters
    # that look less alike (lunate sigma to final sigma).
    # Invisible characters (recap.core.text.INVISIBLE) are read as nothing.
    return unicodedata.normalize(
        "NFKD", text.translate(CONFUSABLES).translate(DROP_INVISIBLE)
    ).translate(CONFUSABLES).translate(DROP_INVISIBLE)


def _view(text: str) -> tuple[str, list[int]]:
    """:func:`_reads` of ``text``, and for each of its characters the index of the
    character of ``text`` it came from."""
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        mapped = ch if ch.isascii() else _reads(ch)
        out.append(mapped)
        where.extend([i] * len(mapped))
    return "".join(out), where


# A quick test that ``text`` may hold a header or a label: its ASCII letters and
# digits alone (every other byte dropped), in lower case, must hold a phrase's
# letters (or "message"). Every match of the patterns passes it; most text fails
# it in a few passes in C, a hundred times faster than the patterns.
_DROP = bytes(range(128, 256)) + bytes(c for c in range(128) if not chr(c).isalnum())
_KEYS = tuple("".join(c for c in p if c.isalnum()).encode() for p in HEADER_PHRASES)


# Mapping look-alike letters is the slow part of reading a non-ASCII text (a dict
# lookup per character): the test's answer is remembered by the text's digest, so
# the same window message, sent on every reply, is mapped once.
_MEMORY: dict[bytes, bool] = {}
MAX_REMEMBERED = 8192


def _may_hold(text: str) -> bool:
    if text.isascii():
        return _holds_key(text)
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
    found = _MEMORY.get(digest)
    if found is None:
        found = _holds_key(_reads(text))
        if len(_MEMORY) >= MAX_REMEMBERED:
            _MEMORY.clear()
        _MEMORY[digest] = found
    return found


def _holds_key(seen: str) -> bool:
    letters = seen.encode("utf-8").translate(None, _DROP).lower()
    return any(k in letters for k in _KEYS) or ("[" in seen and b"message" in letters)


def defuse_headers(text: str) -> str:
    """``text`` with the first character of everything that reads as one of
    Recap's headers or recall labels written as a character reference."""
    if not (_may_hold(text) and _HEADERS.search(text if text.isascii() else _reads(text))):
        return text  # the common case, a few passes in C
    if text.isascii():
        starts = [m.start() for m in _HEADERS.finditer(text)]
    else:
        seen, where = _view(text)
        starts = sorted({where[m.start()] for m in _HEADERS.finditer(seen)})
    out: list[str] = []
    last = 0
    for at in starts:
        out.append(text[last:at])
        out.append(f"&#{ord(text[at])};")
        last = at + 1
    out.append(text[last:])
    return "".join(out)


def defuse_text(text: str) -> str:
    """``text`` with Recap's tags (recap.core.text.defuse_all), headers and recall
    labels defused; line breaks kept (a message of the window, a system row)."""
    return defuse_headers(defuse_all(text))


def escape_breaks(text: str, *, keep_newline: bool = False) -> str:
    """``text`` with every line break written as its escape (``\\n``, ``\\r``,
    ``\\u2028``...); with ``keep_newline``, a ``\\n`` (or ``\\r\\n``) stays a line
    break and only the others are escaped. One pass in C (str.translate)."""
    if keep_newline:
        return text.replace("\r\n", "\n").translate(_ODD_ESCAPES)
    return text.translate(_ESCAPES)


_ESCAPES = str.maketrans({c: {"\n": "\\n", "\r": "\\r", "\x0b": "\\v", "\x0c": "\\f"}.get(
    c, f"\\u{ord(c):04x}") for c in LINE_BREAKS})
_ODD_ESCAPES = {k: v for k, v in _ESCAPES.items() if k != ord("\n")}


def defuse_entry(text: str) -> str:
    """One entry of a block (a memory, a details line): :func:`defuse_text` with every
    line break escaped, so it stays one line."""
    return escape_breaks(defuse_text(text))


def defuse_quoted(text: str) -> str:
    """A recalled passage (a line and its neighbours): :func:`defuse_text` with every
    line break but ``\\n`` escaped (the caller indents its lines)."""
    return escape_breaks(defuse_text(text), keep_newline=True)


def defuse_summary(summary: str, *, keep: Collection[str]) -> str:
    """A stored summary (the model's prose, then Recap's details section) as a
    block shows it: each line but Recap's own headers (``keep``, exact) defused,
    every line break but ``\\n`` escaped."""
    lines = escape_breaks(summary, keep_newline=True).split("\n")
    return "\n".join(line if line in keep else defuse_text(line) for line in lines)


def details_like(line: str) -> bool:
    """Whether ``line`` starts with something a model reads as the details header
    (in bold, as a heading, with other spacing or look-alike letters)."""
    return bool(_DETAILS_LINE.match(line if line.isascii() else _reads(line)))


def defuse_blocks(blocks: list[dict[str, Any]], *,
                  own: Collection[int] = ()) -> list[dict[str, Any]]:
    """Copies of ``blocks`` (a stored content array) with the text a model reads as
    data defused (:func:`defuse_text`): text blocks and their citations, tool
    results, plain-text documents, search results and the plain text of server
    tool and MCP results. ``own`` are the indexes of the blocks that are Recap's
    stubs (recap.core.retention.own_stubs): their opening is kept, the rest is
    defused. Tool calls, thinking and compactions (signed), encrypted fields,
    media and blocks of a type Recap does not know are kept as they are."""
    return [_own_stub(b) if i in own else _defuse_block(b) for i, b in enumerate(blocks)]


def _own_stub(block: dict[str, Any]) -> dict[str, Any]:
    """Recap's stub (a tool result of text) with its opening kept and the rest
    defused (what it quotes was defused when it was written; this reads it again
    as every other text is read)."""
    inner = block.get("content")
    if isinstance(inner, str):
        return {**block, "content": _own_text(inner)}
    if isinstance(inner, list) and inner and isinstance(inner[0], dict) \
            and isinstance(inner[0].get("text"), str):
        first = {**inner[0], "text": _own_text(inner[0]["text"])}
        return {**block, "content": [first, *_inner(inner[1:])]}
    return _defuse_block(block)


def _own_text(text: str) -> str:
    if not text.startswith(STUB_OPEN):
        return defuse_text(text)
    return STUB_OPEN + defuse_text(text[len(STUB_OPEN):])


def _fields(block: dict[str, Any], *names: str) -> dict[str, Any]:
    """``block`` with its string fields ``names`` defused (the others as they are)."""
    return {**block, **{n: defuse_text(block[n]) for n in names
                        if isinstance(block.get(n), str)}}


def _inner(value: Any) -> Any:
    """A result's ``content``: a string or a list of blocks, defused."""
    if isinstance(value, str):
        return defuse_text(value)
    if isinstance(value, list):
        return [_defuse_block(b) if isinstance(b, dict) else b for b in value]
    return value


# Server tools' results whose ``content`` is an object of plain text fields (code
# run in the API's sandbox prints what it read), by the type of that object.
_PLAIN_RESULTS = {
    "code_execution_result": ("stdout", "stderr"),
    "bash_code_execution_result": ("stdout", "stderr"),
    "text_editor_code_execution_view_result": ("content",),
}
_SERVER_RESULTS = ("code_execution_tool_result", "bash_code_execution_tool_result",
                   "text_editor_code_execution_tool_result")
# What a citation quotes and the title it names are plain text; its index into
# the source (``encrypted_index``) is replayed as the API wrote it.
_CITED = ("cited_text", "title", "document_title")


def _defuse_block(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        out = {**block, "text": defuse_text(block["text"])}
        if isinstance(block.get("citations"), list):
            out["citations"] = [_fields(c, *_CITED) if isinstance(c, dict) else c
                                for c in block["citations"]]
        return out
    if kind in ("tool_result", "mcp_tool_result"):
        return {**block, "content": _inner(block["content"])} if "content" in block else block
    if kind == "search_result":
        return {**_fields(block, "title"), **({"content": _inner(block["content"])}
                                              if "content" in block else {})}
    if kind == "web_search_tool_result" and isinstance(block.get("content"), list):
        return {**block, "content": [_fields(r, "title") if isinstance(r, dict)
                                     and r.get("type") == "web_search_result" else r
                                     for r in block["content"]]}
    if kind == "web_fetch_tool_result" and isinstance(block.get("content"), dict):
        fetched = block["content"]
        if fetched.get("type") == "web_fetch_result" and isinstance(fetched.get("content"), dict):
            return {**block, "content": {**fetched, "content": _defuse_block(fetched["content"])}}
        return block
    if kind in _SERVER_RESULTS and isinstance(block.get("content"), dict):
        result = block["content"]
        return {**block, "content": _fields(result, *_PLAIN_RESULTS.get(result.get("type"), ()))}
    if kind == "document":
        return _document(_fields(block, "title", "context"))
    return block


def _document(block: dict[str, Any]) -> dict[str, Any]:
    source = block.get("source")
    if not isinstance(source, dict):
        return block
    if source.get("type") == "text" and isinstance(source.get("data"), str):
        return {**block, "source": {**source, "data": defuse_text(source["data"])}}
    if source.get("type") == "content":
        inner = source.get("content")
        content: Any = (defuse_text(inner) if isinstance(inner, str)
                        else [_defuse_block(b) for b in inner or ()])
        return {**block, "source": {**source, "content": content}}
    return block
