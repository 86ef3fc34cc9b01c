"""Which stubs of a stored message Recap wrote (pure): only those are stubs.

A stub (recap.core.retention.stubs) is text, and an app or a tool can send the
same text byte for byte. Recap archives every tool result it clears before its
stub replaces it, so a stored block is Recap's stub exactly when it reads as a
stub and differs from the same block of its message's archived original. Any
other tool result that reads as a stub is data: the job path is shown it with
its first character as a character reference (:func:`as_data`), and a request
shows it defused (recap.core.context.assemble). The drivers read the archived
originals only for the messages :func:`holds_stub_like` says may hold a stub.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from recap.core.retention.stubs import STUB_OPEN, STUB_TAIL, body_of, is_stub

Blocks = list[dict[str, Any]]


def stub_like(block: dict[str, Any]) -> bool:
    """Whether ``block`` is a tool result whose text reads as a stub, whoever wrote
    it. Looks at the start of its text first: most blocks fail there."""
    if block.get("type") != "tool_result":
        return False
    inner = block.get("content")
    first = inner[0] if isinstance(inner, list) and inner else None
    head = inner if isinstance(inner, str) else (
        first.get("text") if isinstance(first, dict) else None)
    if not (isinstance(head, str) and head.startswith(STUB_OPEN)):
        return False
    body = body_of(block)
    return body is not None and is_stub(body)


def holds_stub_like(blocks: Sequence[dict[str, Any]] | None) -> bool:
    """Whether any of ``blocks`` (a stored content array, or None) reads as a stub."""
    return any(stub_like(b) for b in blocks or ())


def recaps(blocks: Sequence[dict[str, Any]], original: Sequence[dict[str, Any]] | None
           ) -> list[int]:
    """The indexes of ``blocks`` that are Recap's stubs: they read as a stub and
    differ from the same block of the message's archived ``original`` (None: the
    message has no archived copy, so it holds no stub of Recap's)."""
    if not original:
        return []
    return [i for i, b in enumerate(blocks)
            if i < len(original) and original[i] != b and stub_like(b)]


def as_data(blocks: Blocks, original: Blocks | None) -> Blocks:
    """``blocks`` with each tool result that reads as a stub but is not Recap's
    (see :func:`recaps`) shown as data: its first character as a character
    reference. The other blocks are the same objects, so a caller can tell what
    it was shown."""
    own = set(recaps(blocks, original))
    shown: Blocks = []
    for i, block in enumerate(blocks):
        body = body_of(block) if i not in own and stub_like(block) else None
        shown.append(block if body is None
                     else {**block, "content": f"&#{ord(body[0])};{body[1:]}"})
    return shown


def held_text(content: str, blocks: Sequence[dict[str, Any]] | None,
              own: Collection[int]) -> str:
    """``content`` (a message's text) without the header lines of its blocks that
    are Recap's stubs (``own``, their indexes): what recall reads as the window,
    so a name Recap's stub lists is looked up in the archive, and a name a forged
    stub lists is held by the window like any other text. Linear in ``content``."""
    heads = {_head(b) for i, b in enumerate(blocks or ()) if i in own}
    heads.discard(None)
    if not heads:
        return content
    return "\n".join(line for line in content.split("\n") if _head_in(line) not in heads)


def _head(block: dict[str, Any]) -> str | None:
    body = body_of(block)
    return _head_in(body.split("\n", 1)[0]) if body else None


def _head_in(line: str) -> str | None:
    """The stub header ``line`` holds (from its opening to its tail), or None."""
    start = line.find(STUB_OPEN)
    end = line.find(STUB_TAIL, start) if start >= 0 else -1
    return line[start:end + len(STUB_TAIL)] if end >= 0 else None
