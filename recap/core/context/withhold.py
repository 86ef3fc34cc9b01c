"""What leaving the window's oldest messages out of a request must keep (pure): the
messages that hold what the newest turn names, and the lines that quote them in
the ``<ARCHIVE_RECALL>`` block when such a message is too big to keep.

Recall (recap.core.context.lookback.cues) does not look up a word the window
holds. So when the window's oldest messages are left out for room
(recap.core.context.assemble), the newest message that holds each word the
newest turn names (identifiers, numbers, paths, names: lookback.named_terms,
matched as recall matches them: recap.core.context.held) is kept, or its line is
quoted instead. Linear in the window.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from recap.core.context.held import held
from recap.core.context.lookback import (
    EXCERPT_BEFORE,
    EXCERPT_CHARS,
    Hit,
    is_tool_result,
    named_terms,
    quote_line,
    snippet_spans,
    split_asked,
)
from recap.core.retention.own_stubs import held_text
from recap.core.text import lower_by_index


class Message(Protocol):
    """A stored message as the window holds it (recap.core.context.assemble.Row)."""

    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def blocks(self) -> list[dict[str, Any]] | None: ...
    @property
    def id(self) -> int | None: ...


def named_rows(rows: Sequence[Message], *, elsewhere: str,
               own: Mapping[int, Collection[int]] | None = None) -> dict[int, list[str]]:
    """{index in ``rows``: the words it must carry}: for each word the newest turn
    names that ``elsewhere`` (the rest of the request: the summary, the
    instructions) does not hold, the newest other row that holds it (the header
    lines of Recap's stubs left out, as recall reads the window; ``own``: the
    blocks that are Recap's stubs, by message id). The rows the newest turn comes
    from (lookback.split_asked) carry nothing: they are never left out."""
    asked, used = split_asked(rows)
    terms = named_terms(asked) if asked else []
    left = set(terms) - held(terms, elsewhere)
    out: dict[int, list[str]] = {}
    for i in range(len(rows) - 1, -1, -1):
        if not left:
            break
        if i in used:
            continue
        row = rows[i]
        mine = (own or {}).get(row.id, ()) if row.id is not None else ()
        found = held(left, held_text(row.content, row.blocks, mine))
        if found:
            out[i] = [t for t in terms if t in found]
            left -= found
    return out


def quotes(row: Message, terms: Sequence[str]) -> list[str]:
    """The recall block's lines quoting where ``row`` names each of ``terms``: the
    line, as recall quotes an archived message (lookback.snippet_spans, labelled
    with its channel and id), each distinct line once."""
    lower = lower_by_index(row.content)
    tool = row.role == "tool" or is_tool_result(row.blocks)
    lines: list[str] = []
    seen: set[str] = set()
    for term in terms:
        at = lower.find(term)
        if at < 0:
            continue
        start = max(0, at - EXCERPT_BEFORE)
        excerpt = row.content[start:start + EXCERPT_CHARS]
        found = snippet_spans(excerpt, term)
        if found is None or found[0] in seen:
            continue
        seen.add(found[0])
        hit = Hit(0, row.id if row.id is not None else -1, row.role, None, excerpt,
                  tool=tool, offset=start)
        lines.append(quote_line(hit, *found))
    return lines
