"""Code blocks and quotations are read as CommonMark reads them (pure): fence
length and character, closing fences, indentation, unclosed fences, indented
code, HTML blocks and elements, nested and full-width quotations."""

from __future__ import annotations

import pytest

from recap.core.memories.markdown import blocks, normalized, outermost

pytestmark = pytest.mark.unit

P = "PLANTED"


def _set_apart(text: str) -> list[tuple[str, str]]:
    """Each outermost block of ``text`` as (its text, its kind)."""
    return [(text[a:b], kind) for a, b, kind in outermost(blocks(normalized(text)))]


def _covered(text: str) -> bool:
    """Whether the line holding P lies in a block."""
    at = text.index(P)
    return any(a <= at < b for a, b, _ in blocks(normalized(text)))


@pytest.mark.parametrize(("text", "inside"), [
    # An unclosed fence runs to the end of the message.
    (f"see\n```\nx\n{P}\n", True),
    # A four-backtick fence holds a three-backtick example: only ```` closes it.
    (f"see\n````\n```\nx\n```\n{P}\n````\nafter", True),
    # A fence line with an info string never closes a block.
    (f"see\n```\nx\n```python\n{P}\n```\nafter", True),
    # A closing fence is at least as long as the opening, of the same character.
    (f"see\n`````\nx\n```\n~~~~~\n{P}\n`````\nafter", True),
    (f"see\n~~~\n{P}\n~~~\nafter", True),
    # Up to three spaces before a fence; four make indented code.
    (f"see\n   ```\n{P}\n   ```\nafter", True),
    (f"see\n\n    {P}\n\nafter", True),
    (f"see\n\n\t{P}\n\nafter", True),
    # HTML blocks and elements, closed or not.
    (f"see\n<pre>\n{P}\n</pre>\nafter", True),
    (f"see <code>{P}</code> after", True),
    (f"see <pre class='x'>{P}", True),
    # Quotations: ASCII, full-width, nested, continued by the next line.
    (f"hmm\n> {P}\n\nafter", True),
    (f"hmm\n＞ {P}\n\nafter", True),
    (f"hmm\n> > > {P}\n\nafter", True),
    (f"hmm\n> a\n{P}\n\nafter", True),
    # A fence in a list item, and one written in full-width backticks.
    (f"- item\n  ```\n  {P}\n", True),
    (f"see\n｀｀｀\n{P}\n", True),
    # What is not a block: prose, a fence closed before it, inline code.
    (f"I am {P}, see `x` and ```y```.", False),
    (f"see\n```\nx\n```\n{P}", False),
    (f"see\n\n  {P}\n", False),
])
def test_blocks_are_read_as_commonmark_reads_them(text: str, inside: bool) -> None:
    assert _covered(text) is inside


def test_block_spans_are_indexes_into_the_text() -> None:
    text = "a\r\n```\r\ncode\r\n```\r\nb ＞ c\n> quoted\n"
    assert _set_apart(text) == [("```\r\ncode\r\n```", "pasted"), ("> quoted", "quoted")]


def test_a_block_inside_another_is_listed_after_it() -> None:
    text = "> quoted\n> ```\n> code\n> ```\n"
    kinds = [kind for *_, kind in blocks(text)]
    assert kinds == ["quoted", "pasted"]
    assert _set_apart(text) == [(text.rstrip("\n"), "quoted")]


def test_quotations_deeper_than_the_parser_reads_are_one_block() -> None:
    text = "intro\n\n" + ">" * 500 + f" {P}\n\nafter"
    assert _covered(text) and "after" not in "".join(t for t, _ in _set_apart(text))


def test_normalisation_keeps_every_index() -> None:
    text = "Ｆｒｏｍ：\u3000＞ ｀｀｀ é 日本"
    seen = normalized(text)
    assert len(seen) == len(text) and seen == "From: > ``` é 日本"
