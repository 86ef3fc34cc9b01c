"""Messages API content arrays: validation against a mirror of the SDK's request
types (pure).

The chat app's API must not load the ``anthropic`` SDK (import-linter contract
and tests/api/test_import_cost.py: the SDK costs ~1 s and tens of MB per
process), so the shapes Recap accepts are vendored here as strict pydantic
models, one per SDK ``...Param`` TypedDict, with the same field names and
``type`` tags. tests/core/content/test_blocks.py and test_server_blocks.py check
every model against the installed SDK's TypedDict (fields a subset of its keys,
same tags; the beta types for MCP and compaction), that every block type of the
SDK's replies is known here, and validate the accepted examples with the SDK's
own types, so a drift fails CI.

Accepted: ``text`` (with its ``citations``); ``tool_use`` {id, name, input};
``tool_result`` {tool_use_id, content (text or text/image/document/search_result
blocks), is_error}; ``thinking`` {thinking, signature}; ``redacted_thinking``
{data}; ``image`` and ``document`` with ``base64``, ``url`` or ``file`` sources
(and a document's ``text``/``content`` sources); ``search_result``;
``container_upload``. What a reply of Claude's server tools holds: ``server_tool_use``
and its ``*_tool_result`` (web search, web fetch, code execution, bash, text
editor, tool search), ``mcp_tool_use``/``mcp_tool_result`` and ``compaction``.
A block of any other ``type`` (one the API adds later) is accepted when it is an
object with a string ``type``, and kept as it came.

Stored as given, keys in the order given: ``cache_control`` is dropped from every
block (breakpoints are placed by ``build_context``, per request), and so are a
known block's top-level fields set to None (absent, to the API), so
``[b.model_dump() for b in reply.content]`` of an SDK response can be stored as
it is. A ``compaction`` block and a block of an unknown type keep even their None
fields: a compaction's ``content: null`` is what the API sent, and goes back so.
"""

from __future__ import annotations

import copy
import math
import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from recap.errors import InvalidInput

# The API's pattern for tool ids and tool names.
TOOL_ID = r"^[a-zA-Z0-9_-]+$"
TOOL_NAME = r"^[a-zA-Z0-9_-]{1,128}$"
# The results of Claude's server tools, each answering a ``server_tool_use`` of
# the same reply by its ``tool_use_id``.
SERVER_RESULTS = ("web_search_tool_result", "web_fetch_tool_result",
                  "code_execution_tool_result", "bash_code_execution_tool_result",
                  "text_editor_code_execution_tool_result", "tool_search_tool_result")
# Which blocks each stored role may hold. ``tool`` rows are user turns to the API.
# A block of a type not known here may sit in any turn but ``system``.
_USER = ("text", "image", "document", "tool_result", "search_result", "container_upload")
ALLOWED = {
    "user": _USER,
    "tool": _USER,
    "assistant": ("text", "tool_use", "thinking", "redacted_thinking", "server_tool_use",
                  *SERVER_RESULTS, "mcp_tool_use", "mcp_tool_result", "compaction",
                  "container_upload"),
    "system": ("text",),
}
# A call and what answers it, by the block's type: (the key of its id, calls?).
CALL_IDS = {"tool_use": "id", "server_tool_use": "id", "mcp_tool_use": "id"}
ANSWER_IDS = {"tool_result": "tool_use_id", "mcp_tool_result": "tool_use_id",
              **dict.fromkeys(SERVER_RESULTS, "tool_use_id")}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Cacheable(_Strict):
    cache_control: dict[str, Any] | None = None


class TextBlock(_Cacheable):  # TextBlockParam
    type: Literal["text"]
    text: str
    citations: list[dict[str, Any]] | None = None


class Base64ImageSource(_Strict):  # Base64ImageSourceParam
    type: Literal["base64"]
    media_type: Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
    data: str


class URLSource(_Strict):  # URLImageSourceParam, URLPDFSourceParam
    type: Literal["url"]
    url: str


class FileSource(_Strict):  # FileImageSourceParam, FileDocumentSourceParam
    type: Literal["file"]
    file_id: str


class ImageBlock(_Cacheable):  # ImageBlockParam
    type: Literal["image"]
    source: Annotated[Base64ImageSource | URLSource | FileSource, Field(discriminator="type")]


class Base64PDFSource(_Strict):  # Base64PDFSourceParam
    type: Literal["base64"]
    media_type: Literal["application/pdf"]
    data: str


class PlainTextSource(_Strict):  # PlainTextSourceParam
    type: Literal["text"]
    media_type: Literal["text/plain"]
    data: str


class ContentSource(_Strict):  # ContentBlockSourceParam
    type: Literal["content"]
    content: str | list[Annotated[TextBlock | ImageBlock, Field(discriminator="type")]]


class DocumentBlock(_Cacheable):  # DocumentBlockParam
    type: Literal["document"]
    source: Annotated[Base64PDFSource | PlainTextSource | ContentSource | URLSource
                      | FileSource, Field(discriminator="type")]
    title: str | None = None
    context: str | None = None
    citations: dict[str, Any] | None = None


class ToolUseBlock(_Cacheable):  # ToolUseBlockParam
    type: Literal["tool_use"]
    id: Annotated[str, Field(pattern=TOOL_ID)]
    name: Annotated[str, Field(pattern=TOOL_NAME)]
    input: dict[str, Any]
    # What a response's ToolUseBlock carries besides (kept as given).
    caller: dict[str, Any] | None = None
    toolset_name: str | None = None


class SearchResultBlock(_Cacheable):  # SearchResultBlockParam
    type: Literal["search_result"]
    source: str
    title: str
    content: list[TextBlock]
    citations: dict[str, Any] | None = None


class ToolResultBlock(_Cacheable):  # ToolResultBlockParam
    type: Literal["tool_result"]
    tool_use_id: Annotated[str, Field(pattern=TOOL_ID)]
    content: (str | list[Annotated[TextBlock | ImageBlock | DocumentBlock | SearchResultBlock,
                                   Field(discriminator="type")]] | None) = None
    is_error: bool | None = None
    toolset_name: str | None = None


class ThinkingBlock(_Strict):  # ThinkingBlockParam
    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingBlock(_Strict):  # RedactedThinkingBlockParam
    type: Literal["redacted_thinking"]
    data: str


class ServerToolUseBlock(_Cacheable):  # ServerToolUseBlockParam
    type: Literal["server_tool_use"]
    id: Annotated[str, Field(pattern=TOOL_ID)]
    # Any tool name: the API adds server tools (the SDK lists today's).
    name: Annotated[str, Field(pattern=TOOL_NAME)]
    input: dict[str, Any]
    caller: dict[str, Any] | None = None


# A server tool's output as the API sent it: an error object or the tool's own
# result (a list of results, or one object). Kept as given; its inner shape is
# the API's and changes with it, so only its outline is checked here.
_ServerOutput = dict[str, Any] | list[dict[str, Any]]


class WebSearchToolResultBlock(_Cacheable):  # WebSearchToolResultBlockParam
    type: Literal["web_search_tool_result"]
    tool_use_id: Annotated[str, Field(pattern=TOOL_ID)]
    content: _ServerOutput
    caller: dict[str, Any] | None = None


class WebFetchToolResultBlock(_Cacheable):  # WebFetchToolResultBlockParam
    type: Literal["web_fetch_tool_result"]
    tool_use_id: Annotated[str, Field(pattern=TOOL_ID)]
    content: dict[str, Any]
    caller: dict[str, Any] | None = None


class _ServerResult(_Cacheable):
    """A server tool's result whose output is one object (the blocks below differ
    only in their ``type``)."""

    tool_use_id: Annotated[str, Field(pattern=TOOL_ID)]
    content: dict[str, Any]


class CodeExecutionToolResultBlock(_ServerResult):  # CodeExecutionToolResultBlockParam
    type: Literal["code_execution_tool_result"]


class BashCodeExecutionToolResultBlock(_ServerResult):  # BashCodeExecutionToolResultBlockParam
    type: Literal["bash_code_execution_tool_result"]


class TextEditorCodeExecutionToolResultBlock(_ServerResult):
    # TextEditorCodeExecutionToolResultBlockParam
    type: Literal["text_editor_code_execution_tool_result"]


class ToolSearchToolResultBlock(_ServerResult):  # ToolSearchToolResultBlockParam
    type: Literal["tool_search_tool_result"]


class ContainerUploadBlock(_Cacheable):  # ContainerUploadBlockParam
    type: Literal["container_upload"]
    file_id: str


class MCPToolUseBlock(_Cacheable):  # BetaMCPToolUseBlockParam
    type: Literal["mcp_tool_use"]
    id: Annotated[str, Field(pattern=TOOL_ID)]
    name: str
    server_name: str
    input: dict[str, Any]


class MCPToolResultBlock(_Cacheable):  # BetaRequestMCPToolResultBlockParam
    type: Literal["mcp_tool_result"]
    tool_use_id: Annotated[str, Field(pattern=TOOL_ID)]
    content: str | list[TextBlock] | None = None
    is_error: bool | None = None


class CompactionBlock(_Cacheable):  # BetaCompactionBlockParam
    type: Literal["compaction"]
    # None: the compaction produced no summary (the API treats the block as a no-op).
    content: str | None = None
    encrypted_content: str | None = None
    signature: str | None = None
    tool_changes: list[dict[str, Any]] | None = None


_KNOWN = (TextBlock | ImageBlock | DocumentBlock | ToolUseBlock | ToolResultBlock
          | ThinkingBlock | RedactedThinkingBlock | SearchResultBlock | ServerToolUseBlock
          | WebSearchToolResultBlock | WebFetchToolResultBlock | CodeExecutionToolResultBlock
          | BashCodeExecutionToolResultBlock | TextEditorCodeExecutionToolResultBlock
          | ToolSearchToolResultBlock | ContainerUploadBlock | MCPToolUseBlock
          | MCPToolResultBlock | CompactionBlock)
_BLOCK: TypeAdapter[Any] = TypeAdapter(Annotated[_KNOWN, Field(discriminator="type")])
KNOWN_TYPES = frozenset(typing.get_args(m.model_fields["type"].annotation)[0]
                        for m in typing.get_args(_KNOWN))
# Kept with every field as given, None ones too (see the module doc).
_VERBATIM = ("compaction",)
# Where a block holds blocks of its own (whose cache_control goes too).
_NESTED = ("tool_result", "mcp_tool_result", "search_result")


def takes_breakpoint(block: dict[str, Any]) -> bool:
    """Whether the API takes ``cache_control`` on ``block``: every known type but
    thinking (a type added later: unknown, so never risked)."""
    return block.get("type") in KNOWN_TYPES and block.get("type") not in (
        "thinking", "redacted_thinking")


def _where(loc: tuple[int | str, ...], raw: Any) -> str:
    """A pydantic error location as a field path (``content[0].text: ``), read
    along the input: the union members and discriminator tags pydantic adds to
    the location are not fields, so they are left out."""
    path = ""
    at_block = True  # the next part may be the tag of the block just entered
    for k, part in enumerate(loc):
        if at_block and isinstance(raw, dict) and part == raw.get("type"):
            at_block = False
            continue
        at_block = False
        if isinstance(part, int) and isinstance(raw, list) and part < len(raw):
            path += f"[{part}]"
            raw, at_block = raw[part], True
        elif (isinstance(part, str) and isinstance(raw, dict)
              and (part in raw or (k == len(loc) - 1 and "[" not in part))):
            path += ("." if path else "") + part
            raw = raw.get(part)
            at_block = isinstance(raw, dict)
    return path + ": " if path else ""


def _first_error(exc: ValidationError, raw: Any) -> str:
    errors = exc.errors()
    # The deepest location is the one that names the real problem; a shallow
    # "should be a valid string" is only the other side of a str | list union.
    err = max(errors, key=lambda e: len(e["loc"]))
    where = _where(err["loc"], raw)
    if err["type"] == "union_tag_invalid":
        return (f"{where}unknown type {err['ctx']['tag']!r} "
                f"(expected {err['ctx']['expected_tags']})")
    if err["type"] == "union_tag_not_found":
        return f"{where}not a block with a 'type'"
    return f"{where}{err['msg']}"


def _check_values(value: Any, path: str) -> None:
    """Refuse what JSON or the database cannot hold as given: NUL and lone
    surrogates (PostgreSQL text and JSONB reject them; escaping would change what
    the app stored), non-finite numbers, and anything that is not a JSON value."""
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidInput(f"{path} contains a NUL character (U+0000), which the database "
                               "cannot store in text or JSON; remove it or escape it first")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInput(f"{path} contains a lone surrogate at position {exc.start}, "
                               "which is not valid UTF-8 text") from None
    elif isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidInput(f"{path}: key {k!r} is not a string (JSON objects only)")
            _check_values(k, f"{path} (a key)")
            _check_values(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_values(v, f"{path}[{i}]")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{path} is {value}, which JSON cannot hold")
    elif value is not None and not isinstance(value, bool | int):
        raise InvalidInput(f"{path} is a {type(value).__name__}, not a JSON value")


def _as_stored(block: dict[str, Any]) -> dict[str, Any]:
    """``block`` as stored: a copy in the order given, without ``cache_control`` (on
    it or its nested blocks) and, for a known block, without top-level fields set
    to None (``reply.content[i].model_dump()`` has ``citations: None``,
    ``caller: None``: absent, to the API). Nothing inside a field is changed
    (a citation's ``title: None`` is the API's own value), nor a ``compaction`` or
    unknown block's None fields."""
    kind = block.get("type")
    keep_none = kind in _VERBATIM or kind not in KNOWN_TYPES
    out = {k: copy.deepcopy(v) for k, v in block.items()
           if k != "cache_control" and (keep_none or v is not None)}
    if kind in _NESTED and isinstance(out.get("content"), list):
        out["content"] = [_as_stored(b) for b in out["content"]]
    source = out.get("source")
    if kind == "document" and isinstance(source, dict) and isinstance(source.get("content"),
                                                                       list):
        out["source"] = {**source, "content": [_as_stored(b) for b in source["content"]]}
    return out


def _check_block(role: str, raw: Any, name: str) -> str:
    """The type of ``raw``, a block of a ``role`` message, once checked; InvalidInput
    names what is wrong."""
    kind = raw.get("type") if isinstance(raw, dict) else None
    if isinstance(raw, dict) and "type" in raw and not isinstance(kind, str):
        raise InvalidInput(f"{name}: type must be a string, got {type(kind).__name__}")
    if isinstance(kind, str) and kind not in KNOWN_TYPES:
        if not kind.strip():
            raise InvalidInput(f"{name}: type is empty")
        if role == "system":
            raise InvalidInput(f"{name}: system messages cannot hold {kind} blocks "
                               f"(allowed: {', '.join(ALLOWED[role])})")
        return kind  # a type the API added later: kept as it came
    try:
        block = _BLOCK.validate_python(raw)
    except ValidationError as exc:
        raise InvalidInput(f"{name}: {_first_error(exc, raw)}") from None
    if block.type not in ALLOWED[role]:
        raise InvalidInput(f"{name}: {role} messages cannot hold {block.type} blocks "
                           f"(allowed: {', '.join(ALLOWED[role])})")
    if block.type == "compaction" and block.content is not None and not block.content.strip():
        raise InvalidInput(f"{name}: content is empty; a compaction without a summary has "
                           "content null")
    return str(block.type)


def validate_blocks(role: str, content: list[Any]) -> list[dict[str, Any]]:
    """``content`` checked block by block; returns the blocks as stored (what the
    app passed, in its order: see :func:`_as_stored`).

    Raises InvalidInput naming the block (``content[2] (tool_result)``) and the
    field: misplaced block types, missing or extra fields of a known block, blank
    text, bad tool ids, duplicate call ids, a ``type`` that is not a string, NUL
    or lone surrogates.
    """
    if not content:
        raise InvalidInput("content is an empty list; a message needs at least one block")
    out: list[dict[str, Any]] = []
    calls: set[str] = set()
    for i, raw in enumerate(content):
        kind = raw.get("type") if isinstance(raw, dict) else None
        name = f"content[{i}]" + (f" ({kind})" if isinstance(kind, str) else "")
        kind = _check_block(role, raw, name)
        _check_values(raw, name)  # before copying: only JSON values are copied
        stored = _as_stored(raw)
        _check_nonblank(stored, name)
        if kind in CALL_IDS:
            ident = stored[CALL_IDS[kind]]
            if ident in calls:
                raise InvalidInput(f"{name}: id {ident!r} is used by an earlier call of this "
                                   "message")
            calls.add(ident)
        out.append(stored)
    return out


def _check_nonblank(block: dict[str, Any], name: str) -> None:
    """The API refuses empty text blocks, at any depth."""
    if block.get("type") == "text" and not block.get("text", "").strip():
        raise InvalidInput(f"{name}: text is empty or whitespace only")
    inner = block.get("content")
    if block.get("type") in _NESTED and isinstance(inner, list):
        for j, b in enumerate(inner):
            _check_nonblank(b, f"{name}.content[{j}]")
