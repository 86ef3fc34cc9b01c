"""A message's content made ready to store: a string, or a Messages API content
array validated, rendered and measured (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from recap.core.content import media
from recap.core.content.blocks import validate_blocks
from recap.core.content.render import digest, links_text
from recap.core.validate import check_str
from recap.errors import InvalidInput

# Far above any real chat message (a bigger one is almost surely a bug upstream),
# and small enough that one message is summarized within a job's time limit.
MAX_CONTENT_CHARS = 2 * 1024 * 1024
# Deepest nesting of lists and objects in a content array (a tool's input nests
# inside its block): real tool inputs stay far below it, and every walk over a
# message (validation, rendering, JSON) stays far below Python's recursion limit.
MAX_NESTING = 64


@dataclass(frozen=True)
class Message:
    """A message ready to store: ``content`` is the text (a block message's
    rendering), ``blocks`` the content array (None for a string message)."""

    content: str
    blocks: list[dict[str, Any]] | None = None
    countable: str = ""  # what token counting reads (blocks only)
    media_tokens: int = 0  # images and documents, by the API's estimates
    tool_links: str | None = None


def check_nesting(value: object, *, limit: int = MAX_NESTING) -> None:
    """Raise InvalidInput if lists and objects in ``value`` nest deeper than ``limit``
    (checked without recursion, so any depth gets the clear error)."""
    stack: list[tuple[object, int, str]] = [(value, 1, "content")]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                raise InvalidInput(f"{path} nests lists and objects {depth} levels deep; at "
                                   f"most {limit} are allowed")
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((v, depth + 1, f"{path}[{k!r}]" if isinstance(item, dict)
                          else f"{path}[{k}]") for k, v in pairs)


def prepare_content(role: str, content: object, *, max_inline_chars: int) -> Message:
    """``content`` (a string or a content array) for a message of ``role``.

    Raises InvalidInput naming the problem: for an array, the block (index and
    type) and its field (see recap.core.content.blocks), and inline base64 data above
    ``max_inline_chars`` (RECAP_MAX_INLINE_BASE64_CHARS) in one message.
    """
    if not isinstance(content, list):
        return Message(check_str(content, "content", max_chars=MAX_CONTENT_CHARS))
    check_nesting(content)
    blocks = validate_blocks(role, content)
    media.check_inline_size(blocks, cap=max_inline_chars)
    d = digest(blocks)
    if len(d.countable) > MAX_CONTENT_CHARS:
        raise InvalidInput(f"content holds {len(d.countable)} characters of text; at most "
                           f"{MAX_CONTENT_CHARS} are allowed")
    return Message(d.text, blocks, d.countable, d.media_tokens,
                   links_text(d.calls, d.answers))
