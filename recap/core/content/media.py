"""Inline images and documents: size caps, format checks and token estimates (pure).

Token estimates follow the Messages API's documentation:

- images: ``width * height / 750`` tokens, after the API's own downscaling (the
  long edge to at most 1568 px and the area to about 1.15 megapixels), so one
  image costs at most about 1,600 tokens. The dimensions are read from the PNG,
  GIF, JPEG or WebP header of base64 data; for ``url`` and ``file`` sources (or
  a header we cannot read) we count IMAGE_DEFAULT_TOKENS, the documented maximum.
- PDFs: each page is sent as text plus an image of the page; the documentation
  gives 1,500-3,000 text tokens per page, so we count PDF_PAGE_TOKENS (the top of
  that range plus a page image) per page, pages counted from the file's page
  objects. A ``url``/``file`` PDF, whose pages we cannot see, counts as one page:
  an under-estimate the app should know about (prefer base64 when the budget matters).
- plain-text and content documents count as their text.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from collections.abc import Iterator
from typing import Any

from recap.errors import InvalidInput

IMAGE_DEFAULT_TOKENS = 1_600
PDF_PAGE_TOKENS = 3_000 + IMAGE_DEFAULT_TOKENS
_MAX_EDGE = 1568
_MAX_PIXELS = 1_150_000
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
_MAGIC = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",),
          "image/gif": (b"GIF87a", b"GIF89a"), "image/webp": (b"RIFF",),
          "application/pdf": (b"%PDF-",)}


def inline_sources(blocks: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, source) of every image or document source, nested ones included."""
    for i, b in enumerate(blocks):
        yield from _sources(b, f"content[{i}] ({b.get('type')})")


def _sources(b: dict[str, Any], where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if b.get("type") in ("image", "document"):
        yield where, b["source"]
        inner = b["source"].get("content")
    else:
        inner = b.get("content")
    if isinstance(inner, list):
        for j, nested in enumerate(inner):
            yield from _sources(nested, f"{where}.content[{j}]")


# Decoded in pieces of this many characters (a multiple of 4): one C call over
# megabytes holds the GIL throughout, and the asyncio API validates a message in a
# thread beside the app's event loop.
B64_PIECE = 256 * 1024


def b64decode(data: str) -> bytes:
    """``base64.b64decode(data, validate=True)``, a piece at a time (binascii.Error
    for the same inputs: padding only at the very end)."""
    if len(data) <= B64_PIECE:
        return base64.b64decode(data, validate=True)
    parts = []
    for start in range(0, len(data), B64_PIECE):
        piece = data[start:start + B64_PIECE]
        if start + B64_PIECE < len(data) and "=" in piece:
            raise binascii.Error("padding before the end")
        parts.append(base64.b64decode(piece, validate=True))
    return b"".join(parts)


def decode(source: dict[str, Any], where: str) -> bytes:
    """A base64 source's bytes; InvalidInput if they are not base64 or not the
    declared format (the API refuses both)."""
    try:
        raw = b64decode(source["data"])
    except (binascii.Error, ValueError):
        raise InvalidInput(f"{where}: source.data is not valid base64") from None
    media = source["media_type"]
    if not raw.startswith(_MAGIC[media]) or (media == "image/webp" and raw[8:12] != b"WEBP"):
        raise InvalidInput(f"{where}: source.data is not {media} data (its first bytes do not "
                           "match the declared media_type)")
    return raw


def check_inline_size(blocks: list[dict[str, Any]], *, cap: int) -> None:
    """Refuse a message whose inline base64 data passes ``cap`` characters in all."""
    total = 0
    for where, source in inline_sources(blocks):
        if source.get("type") == "base64":
            total += len(source["data"])
            if total > cap:
                raise InvalidInput(
                    f"{where}: inline base64 data reaches {total} characters in this message; "
                    f"the cap is {cap} (RECAP_MAX_INLINE_BASE64_CHARS). Send large files by "
                    "url or file id instead")


def image_size(raw: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, GIF, JPEG or WebP header; None if unreadable."""
    try:
        if raw.startswith(b"\x89PNG"):
            return struct.unpack(">II", raw[16:24])
        if raw.startswith(b"GIF8"):
            return struct.unpack("<HH", raw[6:10])
        if raw.startswith(b"RIFF") and raw[12:16] == b"VP8X":
            w, h = int.from_bytes(raw[24:27], "little"), int.from_bytes(raw[27:30], "little")
            return w + 1, h + 1
        if raw.startswith(b"RIFF") and raw[12:16] == b"VP8L":
            bits = int.from_bytes(raw[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        if raw.startswith(b"RIFF") and raw[12:16] == b"VP8 ":
            w, h = struct.unpack("<HH", raw[26:30])
            return w & 0x3FFF, h & 0x3FFF
        if raw.startswith(b"\xff\xd8"):
            return _jpeg_size(raw)
    except struct.error:
        return None
    return None


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(raw):
        if raw[i] != 0xFF:
            return None
        marker = raw[i + 1]
        length = struct.unpack(">H", raw[i + 2:i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", raw[i + 5:i + 9])
            return w, h
        i += 2 + length
    return None


def image_tokens(size: tuple[int, int] | None) -> int:
    """The API's estimate for an image of ``size`` pixels (see the module doc)."""
    if size is None or min(size) <= 0:
        return IMAGE_DEFAULT_TOKENS
    w, h = size
    scale = min(1.0, _MAX_EDGE / max(w, h), math.sqrt(_MAX_PIXELS / (w * h)))
    return max(1, math.ceil((w * scale) * (h * scale) / 750))


def pdf_pages(raw: bytes) -> int:
    """Page objects in a PDF (at least 1)."""
    return max(1, len(_PDF_PAGE.findall(raw)))


def describe(source: dict[str, Any], raw: bytes | None) -> str:
    """``image/png, 800x600, 12 KB`` (what the summarizer sees instead of the data)."""
    kind = source.get("type")
    if kind == "url":
        return f"url {source['url'][:200]}"
    if kind == "file":
        return f"file {source['file_id'][:100]}"
    if kind == "text":
        return "text/plain"
    if kind == "content":
        return "content blocks"
    parts = [source["media_type"]]
    if raw is not None:
        size = image_size(raw) if source["media_type"].startswith("image/") else None
        if size:
            parts.append(f"{size[0]}x{size[1]}")
        if source["media_type"] == "application/pdf":
            parts.append(f"{pdf_pages(raw)} pages")
        parts.append(f"{max(1, len(raw) // 1024)} KB")
    return ", ".join(parts)


def source_tokens(source: dict[str, Any], raw: bytes | None, *, image: bool) -> int:
    """Estimated tokens of one image or binary document source (text sources: 0,
    they are counted as text)."""
    if image:
        return image_tokens(image_size(raw) if raw is not None else None)
    if source.get("type") in ("text", "content"):
        return 0
    return PDF_PAGE_TOKENS * (pdf_pages(raw) if raw is not None else 1)
