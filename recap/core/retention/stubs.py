"""Tool output that leaves the window without a model call (pure).

An agent's tool results are most of its context, and most of what they hold is
never used again. With the archive on (RECAP_ARCHIVE_SUMMARIZED), a tool result
that left the recent keep window and that nothing used is replaced in the stored
window by a short stub, and its full text stays in the archive, where reply-time
recall finds it when a later turn names one of its identifiers:

    [tool output cleared by Recap: 6,412 tokens, `logs/api.log`, names ERR-4471,
    r123456 (12 more); the full text is in the archive: name one of these to recall it]

When the app gives its model a recall tool (RECAP_RECALL_TOOL names it), the
stubs written from then on end by saying to call it with the result's
tool_use_id instead: ``...; the full text is in the archive: call recap_recall
with tool_use_id toolu_01A to recall it]``. Stubs already written keep their
words (a stored row never changes on its own); :func:`is_stub` reads both.

Which results are cleared is read from salience (recap.core.retention.salience),
over the specifics a tool result was the first to say (what it shares with the
call that asked for it is no evidence it was used):

- one whose specifics someone stated or named again later (``STATED``,
  ``REFERRED``) stays whole;
- one the assistant used right after it returned (``USED``) keeps the lines that
  hold what it used, after its stub;
- one nothing used becomes its stub alone.

A stub is a function of the stored text alone (the same text on every reply, so
the cached prefix survives) and is never stubbed again (:func:`is_stub`). What it
quotes of the tool result (its first line, its identifiers, the lines kept) is
data: each piece is defused (recap.core.defuse.defuse_entry) and can neither
break the stub's line nor forge Recap's blocks. Every scan here is linear in the
text it reads.

:func:`brief` renders a tool result for the summarizer the same way (its stub and
the lines holding what salience ranks above REST), so a fold is not sent whole
outputs it will not keep.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recap.core.content.render import full_text
from recap.core.defuse import STUB_OPEN as STUB_OPEN  # defusing keeps it in own stubs only
from recap.core.defuse import defuse_entry
from recap.core.prompts.summarize import Turn
from recap.core.retention.salience import Origin, Rank, Salience, Voice, key, rank
from recap.core.specifics import extract_specifics

ARCHIVED = "; the full text is in the archive: "
STUB_TAIL = ARCHIVED + "name one of these to recall it]"
# The tail of a stub naming the recall tool; a name and an id as the Messages API
# spells them (bounded, so the match is linear).
TOOL_TAIL = re.compile(re.escape(ARCHIVED) + r"call [A-Za-z0-9_-]{1,64} with (?:tool_use_id "
                       r"[A-Za-z0-9_-]{1,255}|this result's tool_use_id) to recall it\]")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_TOOL_USE_ID = re.compile(r"[A-Za-z0-9_-]{1,255}")
TOOL_TAIL_CHARS = len(ARCHIVED) + len("call  with tool_use_id  to recall it]") + 64 + 255
KEPT_HEAD = "\nlines it used:\n"
# Identifiers a stub lists: enough for a later turn to name one, few enough to
# keep the stub a line long.
MAX_NAMED = 8
MAX_NAME_CHARS = 60
MAX_FIRST_CHARS = 100
# Lines a stub keeps of what the assistant used, each cut to MAX_LINE_CHARS.
MAX_KEPT_LINES = 12
MAX_LINE_CHARS = 240
# A tool result below this many tokens stays whole: its stub would save little.
MIN_CLEAR_TOKENS = 300
# The longest a stub can be (its header, names and kept lines): a text longer than
# this is never a stub, however it starts.
MAX_STUB_CHARS = (len(STUB_OPEN) + max(len(STUB_TAIL), TOOL_TAIL_CHARS) + 64 + MAX_FIRST_CHARS + 8
                  + MAX_NAMED * (MAX_NAME_CHARS + 2) + 32 + len(KEPT_HEAD)
                  + MAX_KEPT_LINES * (MAX_LINE_CHARS * 8 + 1))

_TOKEN = re.compile(r"[\w\-./:#@]+")
_EDGE = "-./:#@_"


def is_stub(text: str) -> bool:
    """Whether ``text`` (a tool result's body) is a stub, in either wording (naming
    identifiers, or the recall tool): it is never cleared again."""
    return len(text) <= MAX_STUB_CHARS and text.startswith(STUB_OPEN) and (
        STUB_TAIL in text or TOOL_TAIL.search(text) is not None)


def tail(tool: str = "", tool_use_id: str = "") -> str:
    """How a stub ends: with ``tool`` (the recall tool's name), saying to call it with
    ``tool_use_id`` (or with the result's id, when that is not one a model can
    pass back); without, saying to name one of its identifiers."""
    if not _TOOL_NAME.fullmatch(tool):
        return STUB_TAIL
    which = f"tool_use_id {tool_use_id}" if _TOOL_USE_ID.fullmatch(tool_use_id) \
        else "this result's tool_use_id"
    return f"{ARCHIVED}call {tool} with {which} to recall it]"


def names(body: str) -> tuple[list[str], int]:
    """The identifiers ``body`` names, in order of first appearance (at most
    MAX_NAMED), and how many more it names: words holding both letters and
    digits, paths and dotted names (``ERR-4471``, ``r123456``, ``src/app.py``)."""
    seen: set[str] = set()
    shown: list[str] = []
    for raw in _TOKEN.finditer(body):
        word = raw.group().strip(_EDGE)
        if not (3 <= len(word) <= MAX_NAME_CHARS) or word.lower() in seen:
            continue
        digits = any(c.isdigit() for c in word)
        letters = any(c.isalpha() for c in word)
        if (digits and letters) or (letters and ("/" in word or "." in word)):
            seen.add(word.lower())
            if len(shown) < MAX_NAMED:
                shown.append(word)
    return shown, len(seen) - len(shown)


def stub(body: str, *, tokens: int, kept: Sequence[str] = (), tool: str = "",
         tool_use_id: str = "") -> str:
    """The stub of a tool result ``body`` of ``tokens`` tokens, keeping the lines
    ``kept`` (as given, each cut and defused); with ``tool``, it says to call that
    recall tool with ``tool_use_id`` (:func:`tail`)."""
    first = next((line.strip() for line in body.split("\n", 8)[:8] if line.strip()), "")
    parts = [f"{tokens:,} tokens"]
    if first:
        cut = first[:MAX_FIRST_CHARS] + ("..." if len(first) > MAX_FIRST_CHARS else "")
        parts.append(f"`{_quoted(cut)}`")
    shown, more = names(body)
    if shown:
        parts.append("names " + ", ".join(_quoted(n) for n in shown)
                     + (f" ({more} more)" if more else ""))
    text = STUB_OPEN + ", ".join(parts) + tail(tool, tool_use_id)
    lines = [_quoted(line[:MAX_LINE_CHARS]) for line in kept[:MAX_KEPT_LINES]]
    return text + (KEPT_HEAD + "\n".join(lines) if lines else "")


def _quoted(text: str) -> str:
    """A piece of a tool result as a stub quotes it: on one line, with nothing that
    reads as Recap's blocks or as the stub's own end."""
    return (defuse_entry(text).replace("`", "'").replace(STUB_TAIL, "; the full text")
            .replace(ARCHIVED, "; the full text: "))


def body_of(block: dict[str, Any]) -> str | None:
    """The text of a ``tool_result`` block, or None when it holds anything but text
    (an image, a document: those stay whole)."""
    inner = block.get("content")
    if isinstance(inner, str):
        return inner
    if isinstance(inner, list) and all(isinstance(b, dict) and b.get("type") == "text"
                                       and isinstance(b.get("text"), str) for b in inner):
        return "\n".join(b["text"] for b in inner)
    return None


@dataclass(frozen=True)
class Row:
    """A stored message as clearing reads it."""

    id: int
    role: str
    content: str
    blocks: list[dict[str, Any]] | None
    pinned: bool = False


@dataclass(frozen=True)
class Cleared:
    """A message with some of its tool results replaced by stubs: ``blocks`` is its
    new content array, ``results`` how many were cleared, ``tokens`` their size."""

    id: int
    blocks: list[dict[str, Any]]
    results: int
    tokens: int


def voice_of(row: Row, text: str) -> Voice:
    """``row`` as salience reads it (``text``: its whole rendering)."""
    tool = bool(row.blocks) and all(b.get("type") == "tool_result" for b in row.blocks or ())
    return Voice(row.id, row.role, text, None, tool)


def _verdict(body: str, sal: Salience) -> tuple[bool, list[str]]:
    """Whether a tool result ``body`` may be cleared, and the lines to keep: it may
    not when someone stated or named again what it was the first to say; the lines
    holding what the assistant used right after it are kept."""
    kept: list[str] = []
    for line in body.split("\n"):
        if not line.strip():
            continue
        ranks = [sal.ranks.get(k, Rank.REST) for k in map(key, extract_specifics(line))
                 if sal.origins.get(k) is Origin.TOOL]
        if any(r <= Rank.REFERRED for r in ranks):
            return False, []
        if ranks and min(ranks) is Rank.USED:
            kept.append(line.strip())
    return True, kept


def clear(rows: Sequence[Row], *, keep: int, texts: Sequence[str],
          count: Callable[[str], int], min_tokens: int = MIN_CLEAR_TOKENS,
          tool: str = "") -> list[Cleared]:
    """The messages of ``rows`` (the window, oldest first; ``texts`` their whole
    renderings) whose tool results are cleared: outside the newest ``keep``
    messages, not pinned, at least ``min_tokens`` long, nothing stated or named
    again of them (see the module), and whose stub is at most half their size;
    with ``tool``, the stubs say to call that recall tool (:func:`tail`)."""
    old = max(0, len(rows) - max(keep, 1))
    if not any(b.get("type") == "tool_result" for r in rows[:old] for b in r.blocks or ()):
        return []  # nothing to clear: no need to rank the window
    sal = rank([voice_of(r, t) for r, t in zip(rows[:old], texts[:old], strict=True)],
               [voice_of(r, t) for r, t in zip(rows[old:], texts[old:], strict=True)])
    out = []
    for row in rows[:old]:
        if row.pinned or not row.blocks:
            continue
        blocks, results, tokens = _cleared_blocks(row.blocks, sal, count=count,
                                                  min_tokens=min_tokens, tool=tool)
        if results:
            out.append(Cleared(row.id, blocks, results, tokens))
    return out


def _cleared_blocks(blocks: list[dict[str, Any]], sal: Salience, *,
                    count: Callable[[str], int], min_tokens: int,
                    tool: str) -> tuple[list[dict[str, Any]], int, int]:
    new: list[dict[str, Any]] = []
    results = tokens = 0
    for block in blocks:
        body = body_of(block) if block.get("type") == "tool_result" else None
        if body is None or is_stub(body):
            new.append(block)
            continue
        size = count(body)
        may, kept = _verdict(body, sal) if size >= min_tokens else (False, [])
        text = stub(body, tokens=size, kept=kept, tool=tool,
                    tool_use_id=str(block.get("tool_use_id") or "")) if may else ""
        if not may or count(text) * 2 > size:
            new.append(block)
            continue
        new.append({**block, "content": text})
        results += 1
        tokens += size
    return new, results, tokens


def brief(blocks: list[dict[str, Any]], sal: Salience, *,
          count: Callable[[str], int]) -> list[dict[str, Any]]:
    """``blocks`` as the summarizer is sent them: each tool result of text as its
    stub and the lines holding a specific salience ranks above REST (what was
    stated, named again or used); stubs and other blocks as they are."""
    new: list[dict[str, Any]] = []
    for block in blocks:
        body = body_of(block) if block.get("type") == "tool_result" else None
        if body is None or is_stub(body):
            new.append(block)
            continue
        kept = [line.strip() for line in body.split("\n") if line.strip() and any(
            sal.ranks.get(k, Rank.REST) < Rank.REST for k in map(key, extract_specifics(line)))]
        size = count(body)
        # As in the window: a small result, or one whose stub saves little, goes whole.
        text = stub(body, tokens=size, kept=kept) if size >= MIN_CLEAR_TOKENS else ""
        new.append({**block, "content": text} if text and count(text) * 2 <= size
                   else block)
    return new


def brief_turns(turns: Sequence[Turn], results: Mapping[int, list[dict[str, Any]]],
                sal: Salience, *, count: Callable[[str], int]) -> tuple[Turn, ...]:
    """``turns`` (a fold's batch, each in full) as the summarizer is sent them: the
    messages of ``results`` (content arrays holding tool results, by id) rendered
    with each tool result :func:`brief`; the others as they are."""
    return tuple(Turn(t.id, t.role, full_text(brief(results[t.id], sal, count=count)))
                 if t.id in results else t for t in turns)


def strip_stubs(text: str) -> str:
    """``text`` without the stubs' lines (their header and names): what recall
    reads as the context, so a name a stub lists is still looked up in the archive."""
    if STUB_OPEN not in text:
        return text
    return "\n".join(line for line in text.split("\n") if STUB_OPEN not in line)
