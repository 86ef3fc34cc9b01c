"""Every scanner of untrusted text runs in time linear in its input, on generated
pathological inputs (pure).

Hypothesis builds a unit of text from the characters scanners trip on (quotation
marks of every script, opening and closing; every Unicode line break; brackets,
tag openers, separators, digits, Markdown; the words of headers and
introductions) and repeats it, or nests it (every opening mark, then every
closing one). Each scanner reads the text at two sizes, 8x apart; its fastest
of several calls at each size (interleaved, so a load spike hits both) must
grow by at most :data:`LIMIT`, four times linear growth. A quadratic scan grows
by 64 here and fails; nothing compares wall-clock time with a threshold.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from recap.core import defuse, specifics, text
from recap.core.context import forms, lookback, passages, withhold
from recap.core.context import lookback as quote
from recap.core.context.assemble import Row
from recap.core.memories import channels, markdown, provenance, verbatim
from recap.core.memories.facts import Fact
from recap.core.prompts import bulk, echo
from recap.core.prompts.summarize import Turn
from recap.core.retention import details, entries, extractive, own_stubs, stubs
from recap.store import search

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True, scope="module")
def _markdown_read_afresh() -> Iterator[None]:
    """Every call parses its text again: a remembered parse would time a lookup."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(markdown, "MAX_REMEMBERED", 0)
        yield

SMALL = 12_000
GROWTH = 8  # the large input is this many times the small one
# A linear scan grows about GROWTH times, a quadratic one GROWTH**2 (64): the bound
# sits between, with room for a loaded machine's noise on the linear side.
LIMIT = 6 * GROWTH

QUOTES = "\"'“”„‟‘’‚‛«»‹›「」『』〝〞＂＇"
BREAKS = defuse.LINE_BREAKS
ATOMS = [*QUOTES, *BREAKS, "\r\n", "<", "</", "< ", "[", "]", "(", "{", "·", "•", "|",
         "-", ".", "/", ":", "#", "@", "_", "`", "```", "~~~", "*", "**", "> ", " ", "  ",
         "\t", "a", "Ab", "1", "12:30", "2,400", "TP 1357", "é", "\u200b", "Ｗ", "а",
         "2026-11-14", "14/11", "Nov ", "14th", ",000", "1.2k", "9f2c1e7", "e-", "ed",
         "From: ", "wrote:", "this:", "FACT: ", "What you know about the user",
         "[user · message 1]", "[search result ", "Details (kept verbatim by Recap):",
         "[tool output cleared by Recap: ", "; the full text is in the archive: name",
         "MEMORIES", "e-mail",
         "````", "＞", "    ", "<pre>", "</pre>", "<code>", "Here is the log:\n", "From：",
         "\u034f", "\u3164", "\ufe0f"]


def _fill(unit: str, n: int) -> str:
    return (unit * (n // max(1, len(unit)) + 1))[:n]


def _nested(unit: str, n: int) -> str:
    """Every opening mark of ``unit`` n/2 times, then every closing one."""
    half = n // 2
    return _fill(unit, half) + _fill(unit[::-1], n - half)


SCANNERS: dict[str, Callable[[str], object]] = {
    "specifics": lambda s: specifics.extract_specifics.__wrapped__(s),
    "specifics (summary)": lambda s: specifics.extract_specifics.__wrapped__(s, whole=True),
    "contains": lambda s: specifics.contains(s, "TP 1357"),
    "bulk excerpt": lambda s: bulk.excerpt_bulk(s, max_tokens=50, count=len),
    "tags": text.defuse_all,
    "headers and labels": defuse.defuse_text,
    "entry escapes": defuse.defuse_entry,
    "recalled passage": defuse.defuse_quoted,
    "details near-copies": details.strip_details,
    "echo": lambda s: echo.strip_echo.__wrapped__(s, "what you know about the user"),
    "own words": lambda s: provenance.own_text("user", s, None),
    "quotations": provenance.drop_quoted,
    "names": provenance._stated_names,
    "instruction marks": provenance.instruction_like,
    "provenance": lambda s: provenance.attribute("The user's code is 1357.", "user", [s]),
    "entry": lambda s: entries.entry(s, "1357"),
    "peel": entries.peel,
    "snippet": lambda s: quote.snippet(s, "1357"),
    "channels": channels.foreign_spans,
    "markdown blocks": lambda s: markdown.parse(markdown.normalized(s)),
    "verbatim spans": lambda s: verbatim.attribute_facts(
        [Fact("The user is on flight TP 1357.", "fact", 3)], [s]),
    "extractive fold": lambda s: extractive.fold(
        s, [Turn(1, "user", s), Turn(2, "assistant", s)], max_tokens=50, count=len),
    "recall labels": lambda s: lookback.choose_lines(
        [lookback.Hit(0, 1, "user", None, s)], [lookback.Cue("ab", 4.0)]),
    "asked keys": lambda s: forms.asked_keys(s, weight=lookback.weight,
                                             skip=lookback.STOP_WORDS),
    "line keys": forms.line_keys,
    "dates": forms.date_keys,
    "passage": lambda s: passages.render(
        passages.passage(passages.Source(1, s, 0, len(s), call=s),
                         asked={"w:ab": 1.0, "n:1": 3.0, "d:12": 3.0}, cue_keys={"n:1"},
                         label="[x]"), room=200, count=len),
    "stub": lambda s: stubs.stub(s, tokens=len(s), kept=[s]),
    "stubs stripped": stubs.strip_stubs,
    "own stubs' headers": lambda s: own_stubs.held_text(
        s, [{"type": "tool_result", "tool_use_id": "t", "content": stubs.STUB_OPEN + s}], {0}),
    "stub-like blocks": lambda s: own_stubs.recaps(
        [{"type": "tool_result", "tool_use_id": "t", "content": stubs.STUB_OPEN + s}],
        [{"type": "tool_result", "tool_use_id": "t", "content": s}]),
    "server blocks": lambda s: defuse.defuse_blocks([
        {"type": "search_result", "source": "s", "title": s, "content": [
            {"type": "text", "text": s}]},
        {"type": "text", "text": s, "citations": [{"type": "char_location", "cited_text": s}]},
        {"type": "web_fetch_tool_result", "tool_use_id": "t", "content": {
            "type": "web_fetch_result", "url": "u", "content": {
                "type": "document", "title": s, "source": {
                    "type": "text", "media_type": "text/plain", "data": s}}}},
        {"type": "bash_code_execution_tool_result", "tool_use_id": "t", "content": {
            "type": "bash_code_execution_result", "stdout": s, "stderr": s}},
        {"type": "mcp_tool_result", "tool_use_id": "t", "content": s},
        {"type": "tool_result", "tool_use_id": "t", "content": stubs.STUB_OPEN + s}],
        own={5}),
    "stub naming the tool": lambda s: stubs.stub(s, tokens=len(s), kept=[s],
                                                 tool="recap_recall", tool_use_id="toolu_1"),
    "stub recognised": lambda s: stubs.is_stub(stubs.STUB_OPEN + s[:stubs.MAX_STUB_CHARS]),
    "named rows": lambda s: withhold.named_rows(
        [Row("assistant", s, 1), Row("user", "Was LGR-3621 or TP 1357 in " + s, 1)], elsewhere=s),
    "named quotes": lambda s: withhold.quotes(Row("tool", s, 1), ["1357", "ab", "2,400"]),
    "stub selection": lambda s: stubs.clear(
        [stubs.Row(1, "user", "", [{"type": "tool_result", "tool_use_id": "t", "content": s}]),
         *(stubs.Row(2 + k, "assistant", "next", None) for k in range(3))],
        keep=2, texts=[s, "next", "next", "next"], count=len),
    "archive search terms": search.search_terms,
    "archive search terms (small budget)": lambda s: search.search_terms(s, budget=64),
}


def _best(fn: Callable[[Any], object], small: Any, large: Any, calls: int
          ) -> tuple[float, float]:
    """The fastest of ``calls`` calls on each input, interleaved."""
    a = b = float("inf")
    for _ in range(calls):
        t0 = time.perf_counter()
        fn(small)
        t1 = time.perf_counter()
        fn(large)
        t2 = time.perf_counter()
        a, b = min(a, t1 - t0), min(b, t2 - t1)
    return a, b


def growth(fn: Callable[[Any], object], small: Any, large: Any) -> float:
    """How much longer ``fn`` takes on ``large`` than on ``small``; measured again
    with more calls before it is reported above :data:`LIMIT` (a busy machine)."""
    ratio = 0.0
    # One call each first: a linear scan is almost always well inside LIMIT at once,
    # and only a ratio above it pays for the slower, steadier measures.
    for calls in (1, 3, 9, 27):
        a, b = _best(fn, small, large, calls)
        ratio = b / max(a, 1e-4)  # below 0.1 ms, the clock and the call dominate
        if ratio <= LIMIT:
            break
    return ratio


def _check(make: Callable[[int], str]) -> None:
    small, large = make(SMALL), make(SMALL * GROWTH)
    slow = {name: round(r, 1) for name, fn in SCANNERS.items()
            if (r := growth(fn, small, large)) > LIMIT}
    assert slow == {}, f"grew more than {LIMIT}x for {GROWTH}x input"


units = st.lists(st.sampled_from(ATOMS), min_size=1, max_size=8).map("".join)


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(unit=units, nested=st.booleans())
@example(unit="„“", nested=False)  # „ is closed by “ but not by ”: every „ looked ahead
@example(unit="„«“‹「『", nested=True)
@example(unit="\r\u2028- [user · message 1] ", nested=False)
@example(unit="[·", nested=False)
@example(unit="1,", nested=False)  # digits grouped by commas, never closed
@example(unit="november 1", nested=False)  # a month name then digits, again and again
@example(unit="9f2c1e7ab", nested=False)  # one long run of hex: a hash looked ahead
@example(unit="a.b/", nested=False)  # one long path
@example(unit="**Details (kept verbatim by Recap)**\n- x\n", nested=False)
def test_every_scanner_of_untrusted_text_is_linear(unit: str, nested: bool) -> None:
    _check(lambda n: _nested(unit, n) if nested else _fill(unit, n))


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(st.from_regex(r"[a-z]{3,8}(?:[./-][a-z0-9]{1,5})?", fullmatch=True),
                      min_size=5, max_size=20))
def test_recall_cues_cost_the_turn_plus_the_context(words: list[str]) -> None:
    # A turn of distinct words (as many as its length allows), each of them at the
    # end of a context of other words: none is a cue, and each is far into it.
    def said(n: int, tag: str) -> str:
        return " ".join(f"{words[i % len(words)]}{tag}{i}" for i in range(n // 6))[:n]

    def request(n: int) -> tuple[str, str]:
        turn = said(n // 8, "t")
        return turn, said(n, "c") + " " + turn

    def cues(asked: tuple[str, str]) -> object:
        return lookback.cues(asked[0], context=asked[1])

    ratio = growth(cues, request(SMALL * 2), request(SMALL * 2 * GROWTH))
    assert ratio <= LIMIT, ratio


class Counted(str):
    """A text that counts the characters its ``find`` calls read."""

    read = 0

    def find(self, sub: str, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        begin = 0 if start is None else start
        at = str.find(self, sub, begin, len(self) if end is None else end)
        Counted.read += (at + len(sub) if at >= 0 else len(self)) - begin
        return at


@settings(max_examples=40, deadline=None, derandomize=True)
@given(unit=st.lists(st.sampled_from([*QUOTES, "a", " ", "\n"]), min_size=1, max_size=10)
       .map("".join), nested=st.booleans())
@example(unit="„“", nested=False)
@example(unit="„«“", nested=True)
def test_quotation_marks_are_looked_up_once_each(unit: str, nested: bool) -> None:
    # Each closing mark's next position is found once and reused: every mark's
    # lookups together read the text once, however the marks pair up.
    n = 20_000
    said = Counted(_nested(unit, n) if nested else _fill(unit, n))
    Counted.read = 0
    provenance.drop_quoted(said)
    assert Counted.read <= 4 * len(said) + 4, Counted.read


# Markdown's worst shapes for the readers of a user's own words: each unit
# repeated (thousands of fences left open, fences of alternating lengths and
# characters, quotations nested deeper than the parser reads, lists in
# quotations, introductions each followed by a block, elements never closed).
MARKDOWN_UNITS = {
    "unclosed fences": "```\n",
    "unclosed fences, longest first": "``````````\n`````````\n",
    "fences with info strings": "```python\nx\n",
    "alternating fence lengths": "```\n````\n~~~\n~~~~~\n",
    "deep quotations": ">",
    "deep quotations, spaced": "> ",
    "deep full-width quotations": "＞",
    "lists in quotations": "> - ```\n",
    "nested lists": "- ",
    "indented code": "    x\n",
    "introductions of blocks": "Here is the log:\n```\nx\n```\n",
    "introductions": "My colleague wrote: ",
    "unclosed elements": "<pre>",
    "closed elements": "<code></code>",
    "html blocks": "<div>\n",
    "headers": "From： a\n",
}
READERS: dict[str, Callable[[str], object]] = {
    name: SCANNERS[name] for name in ("own words", "names", "channels", "markdown blocks")}


@pytest.mark.parametrize("unit", list(MARKDOWN_UNITS.values()), ids=list(MARKDOWN_UNITS))
def test_markdown_readers_are_linear_on_pathological_blocks(unit: str) -> None:
    small, large = _fill(unit, SMALL), _fill(unit, SMALL * GROWTH)
    slow = {name: round(r, 1) for name, fn in READERS.items()
            if (r := growth(fn, small, large)) > LIMIT}
    assert slow == {}, f"grew more than {LIMIT}x for {GROWTH}x input"


def test_quotations_deeper_than_the_parser_reads_are_linear() -> None:
    # Each line one level deeper than the last, up to far past MAX_NESTING.
    def nest(n: int) -> str:
        return "".join(">" * (i % 400) + " a\n" for i in range(n // 200))

    ratio = growth(READERS["own words"], nest(SMALL * 4), nest(SMALL * 4 * GROWTH))
    assert ratio <= LIMIT, ratio


# The retention guard on one message of many specifics: it finds each specific's
# words in one reading of the message, whatever their number (one long line of
# distinct ids, the same ids again and again, ids with no white space between).
MAX_MESSAGE_CHARS = 2_097_152  # the longest message Recap stores (recap.core.validate)


def _distinct_ids(n: int) -> str:
    return " ".join(f"ID-{100_000 + i}" for i in range(n // 10 + 1))[:n]


def _repeated_ids(n: int) -> str:
    return _fill("LGR-3621 TP1357 tests/load.py:88 2026-03-15 ", n)


def _glued_ids(n: int) -> str:
    # No white space to cut at: ids run on through commas and CJK separators.
    return "、".join(f"ID-{i},{i}号" for i in range(n // 12 + 1))[:n]


def _fold(message: str) -> object:
    from recap.core.retention import guard

    turns = [Turn(1, "user", message), Turn(2, "assistant", "Noted.")]
    needed = guard.required(turns, None)
    lost = guard.missing(needed, summary="A summary.")
    guard.repair_items(turns, None, lost, limit=200)
    return guard.settle(turns=turns, units=[[1, 2]], previous=None, summary="A summary.",
                        facts=(), details_cap=400, count=len, spill=True)


@pytest.mark.parametrize("make", [_distinct_ids, _repeated_ids, _glued_ids])
def test_the_guard_reads_a_message_of_many_specifics_once(make: Callable[[int], str]) -> None:
    ratio = growth(_fold, make(SMALL), make(SMALL * GROWTH))
    assert ratio <= LIMIT, ratio


@pytest.mark.parametrize("make", [_distinct_ids, _repeated_ids, _glued_ids])
def test_many_specifics_are_looked_up_in_one_pass(make: Callable[[int], str]) -> None:
    def lookups(message: str) -> object:
        found = specifics.extract_specifics.__wrapped__(message)
        specifics.absent(found, [message[: len(message) // 2]])
        entries.contexts(message, sorted(found))
        return specifics.joined(provenance.names(message), found)

    ratio = growth(lookups, make(SMALL), make(SMALL * GROWTH))
    assert ratio <= LIMIT, ratio
