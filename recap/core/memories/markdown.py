"""Where a user's turn holds a block Markdown sets apart from the prose around it
(pure): code and quotations, read as CommonMark reads them.

A model reads a turn's Markdown the way a renderer does, so what a renderer shows
as a code block or a quotation is what the user pasted or quoted, however the
block is marked:

- fenced code (```` ``` ```` or ``~~~``, any length, indented up to three
  spaces): it ends only at a fence of the same character, at least as long,
  with nothing after it; a fence that is never closed runs to the end of the
  turn (or of the quotation or list item holding it);
- indented code (four spaces or a tab), HTML blocks (``<pre>``, ``<div>``...),
  and ``<pre>``, ``<code>`` (and ``<samp>``, ``<kbd>``, ``<xmp>``, ``<textarea>``)
  elements anywhere in a line, up to their closing tag or the end of the turn;
- quotations (``>``, nested or not, with the lines CommonMark continues them by).

Markdown's marks are read after compatibility normalisation (:func:`normalized`):
a full-width ``＞`` quotes as ``>`` does, ``｀｀｀`` fences as ```` ``` ````.
The parser is markdown-it-py's CommonMark (block rules only). Every scan is linear
in its input: the parser reads each line a bounded number of times (quotations
and lists nest at most :data:`MAX_NESTING` deep: deeper lines belong to the
outer block), and the element scan resumes where its last element ended.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from markdown_it import MarkdownIt

# How deep quotations and lists are read: a deeper line belongs to the block
# holding it, so it is set apart all the same.
MAX_NESTING = 20

_PARSER = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING})
# The blocks are all that is read: no inline parsing (emphasis, links).
_PARSER.disable(["inline", "text_join"], ignoreInvalid=True)
_KINDS = {"fence": "pasted", "code_block": "pasted", "html_block": "pasted",
          "blockquote_open": "quoted"}
# A turn without any of these holds no block (the common case, one pass in C).
_MAY_HOLD = re.compile(r"[`~><\t]|^ {4}", re.M)
_ELEMENT = re.compile(r"<(pre|code|samp|kbd|xmp|textarea)(?:[ \t\n][^<>]{0,200}+)?>", re.I)
_CLOSING = {tag: re.compile(rf"</{tag}[ \t\n]*+>", re.I)
            for tag in ("pre", "code", "samp", "kbd", "xmp", "textarea")}


def _compatibility_map() -> dict[int, str]:
    """Every character whose NFKC form is one printable ASCII character (full-width
    letters and marks, the ideographic space, small forms, mathematical letters),
    mapped to it: one for one, so an index into the mapped text is an index into
    the text."""
    table: dict[int, str] = {}
    for code in [*range(0xA0, 0x10000), *range(0x1D400, 0x1D800)]:
        form = unicodedata.normalize("NFKC", chr(code))
        if len(form) == 1 and " " <= form <= "~":
            table[code] = form
    return table


NORMAL = _compatibility_map()


def normalized(text: str) -> str:
    """``text`` with each character whose compatibility form is one ASCII
    character written as that character (``：`` as ``:``, ``＞`` as ``>``, ``Ｆ``
    as ``F``), every other character kept: the same length, index for index."""
    return text.translate(NORMAL)


# Parsing is the slow part of reading a turn (a few seconds for a megabyte of dense
# Markdown), and the same turn is read by every reader of a fold and of a reply:
# its blocks are remembered by the text's digest.
_MEMORY: dict[bytes, tuple[tuple[int, int, str], ...]] = {}
MAX_REMEMBERED = 1024


def blocks(text: str) -> list[tuple[int, int, str]]:
    """The code blocks and elements (``pasted``) and quotations (``quoted``) of
    ``text`` (already :func:`normalized`), as (start, end, kind) in document order;
    a block inside another is listed too, after it. Each block runs from the start
    of its first line to the end of its last (without the line break)."""
    if not _MAY_HOLD.search(text):
        return []
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    found = _MEMORY.get(digest)
    if found is None:
        found = tuple(parse(text))
        if len(_MEMORY) >= MAX_REMEMBERED:
            _MEMORY.clear()
        if MAX_REMEMBERED:
            _MEMORY[digest] = found
    return list(found)


def parse(text: str) -> list[tuple[int, int, str]]:
    """:func:`blocks`, read afresh (never remembered)."""
    # The parser reads "\r\n" and "\r" as line breaks; written as " \n" and "\n"
    # they stay one character each, so its line numbers index ``text``.
    source = text.replace("\r\n", " \n").replace("\r", "\n")
    starts = [0, *(m.end() for m in re.finditer("\n", source))]
    found: list[tuple[int, int, str]] = []
    for token in _PARSER.parse(source):
        kind = _KINDS.get(token.type)
        if kind is None or token.map is None:
            continue
        first, last = token.map
        end = starts[last] - 1 if last < len(starts) else len(text)
        if end > starts[first] and text[end - 1] == "\r" and text.startswith("\n", end):
            end -= 1  # a "\r\n" ends the block's last line
        found.append((starts[first], max(end, starts[first]), kind))
    return found + _elements(text)


def _elements(text: str) -> list[tuple[int, int, str]]:
    """Each ``<pre>``, ``<code>``... element of ``text``, wherever it starts, up to
    its closing tag (or the end of ``text``). Linear: each search resumes where
    the last element ended."""
    found: list[tuple[int, int, str]] = []
    at = 0
    while (at := text.find("<", at)) >= 0:
        opening = _ELEMENT.match(text, at)
        if opening is None:
            at += 1
            continue
        closing = _CLOSING[opening.group(1).lower()].search(text, opening.end())
        end = closing.end() if closing else len(text)
        found.append((opening.start(), end, "pasted"))
        if closing is None:
            break
        at = end
    return found


def outermost(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """``spans`` without those inside (or overlapping) an earlier one, in order of
    their start."""
    kept: list[tuple[int, int, str]] = []
    for span in sorted(spans):
        if kept and span[0] < kept[-1][1]:
            if span[1] > kept[-1][1]:
                kept[-1] = (kept[-1][0], span[1], kept[-1][2])
            continue
        kept.append(span)
    return kept
