"""Messages API content arrays: validation against a mirror of the SDK's request
types (pure).

The chat app's API must not load the ``anthropic`` SDK (import-linter contract
and tests/api/test_import_cost.py: the SDK costs ~1 s and tens of MB per
process), so the shapes Recap accepts are vendored here as strict pydantic
models, one per SDK ``...Param`` TypedDict, with the same field names and
``type`` tags. tests/core/content/test_blocks.py checks every model against the
installed SDK's TypedDict (fields a subset of its keys, same tags) and
validates the accepted examples with the SDK's own types, so a drift fails CI.

Accepted: ``text``; ``tool_use`` {id, name, input};
``tool_result`` {tool_use_id, content (text or text/image/document blocks),
is_error}; ``thinking`` {thinking, signature}; ``redacted_thinking`` {data};
``image`` and ``document`` with ``base64``, ``url`` or ``file`` sources (and a
document's ``text``/``content`` sources). ``cache_control`` is accepted and
dropped: breakpoints are placed by ``build_context``, per request; so are
optional fields set to None, so ``[b.model_dump() for b in reply.content]`` of
an SDK response can be stored as it is.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from recap.errors import InvalidInput

# The API's pattern for tool ids and tool names.
TOOL_ID = r"^[a-zA-Z0-9_-]+$"
TOOL_NAME = r"^[a-zA-Z0-9_-]{1,128}$"
# Which blocks each stored role may hold. ``tool`` rows are user turns to the API.
ALLOWED = {
    "user": ("text", "image", "document", "tool_result"),
    "tool": ("text", "image", "document", "tool_result"),
    "assistant": ("text", "tool_use", "thinking", "redacted_thinking"),
    "system": ("text",),
}


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


class ToolResultBlock(_Cacheable):  # ToolResultBlockParam
    type: Literal["tool_result"]
    tool_use_id: Annotated[str, Field(pattern=TOOL_ID)]
    content: (str | list[Annotated[TextBlock | ImageBlock | DocumentBlock,
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


_BLOCK: TypeAdapter[Any] = TypeAdapter(Annotated[
    TextBlock | ImageBlock | DocumentBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock
    | RedactedThinkingBlock, Field(discriminator="type")])


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


def _drop_cache_control(block: dict[str, Any]) -> dict[str, Any]:
    """``block`` without ``cache_control`` and without optional fields set to None
    (``reply.content[i].model_dump()`` has ``citations: None``, ``caller: None``:
    absent, to the API), on it or its nested blocks; never inside a tool's
    ``input``, which is the app's own data."""
    out = {k: v for k, v in block.items() if k != "cache_control" and v is not None}
    if isinstance(out.get("content"), list):
        out["content"] = [_drop_cache_control(b) for b in out["content"]]
    source = out.get("source")
    if isinstance(source, dict) and isinstance(source.get("content"), list):
        out["source"] = {**source, "content": [_drop_cache_control(b)
                                               for b in source["content"]]}
    return out


def validate_blocks(role: str, content: list[Any]) -> list[dict[str, Any]]:
    """``content`` checked block by block; returns the blocks as stored (what the
    app passed, ``cache_control`` dropped).

    Raises InvalidInput naming the block (``content[2] (tool_result)``) and the
    field: unknown or misplaced block types, missing or extra fields, blank text,
    bad tool ids, duplicate tool_use ids, NUL or lone surrogates.
    """
    if not content:
        raise InvalidInput("content is an empty list; a message needs at least one block")
    out: list[dict[str, Any]] = []
    calls: set[str] = set()
    for i, raw in enumerate(content):
        kind = raw.get("type") if isinstance(raw, dict) else None
        name = f"content[{i}]" + (f" ({kind})" if isinstance(kind, str) else "")
        try:
            block = _BLOCK.validate_python(raw)
        except ValidationError as exc:
            raise InvalidInput(f"{name}: {_first_error(exc, raw)}") from None
        if block.type not in ALLOWED[role]:
            raise InvalidInput(f"{name}: {role} messages cannot hold {block.type} blocks "
                               f"(allowed: {', '.join(ALLOWED[role])})")
        stored = _drop_cache_control(block.model_dump(exclude_unset=True))
        _check_values(stored, name)
        _check_nonblank(stored, name)
        if block.type == "tool_use":
            if block.id in calls:
                raise InvalidInput(f"{name}: id {block.id!r} is used by an earlier tool_use "
                                   "block of this message")
            calls.add(block.id)
        out.append(stored)
    return out


def _check_nonblank(block: dict[str, Any], name: str) -> None:
    """The API refuses empty text blocks, at any depth."""
    if block.get("type") == "text" and not block.get("text", "").strip():
        raise InvalidInput(f"{name}: text is empty or whitespace only")
    inner = block.get("content")
    if isinstance(inner, list):
        for j, b in enumerate(inner):
            _check_nonblank(b, f"{name}.content[{j}]")
