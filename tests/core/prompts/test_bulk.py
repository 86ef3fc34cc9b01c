"""Excerpts of pasted bulk content (recap.core.prompts.bulk): what is kept, the marker, and
that the excerpt reads to the retention guard exactly as the original."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recap.bench.harness.seed import demo_script
from recap.core.prompts.bulk import MARKER, excerpt_bulk, excerpt_turns
from recap.core.prompts.summarize import Turn
from recap.core.specifics import extract_specifics, prose
from recap.llm.tokens import count_tokens


def words(text: str) -> int:
    """The counter these tables use: one token a word, so the caps are easy to follow."""
    return len(text.split())


def nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def marker(n: int) -> str:
    return MARKER.format(n=n, lines="line" if n == 1 else "lines")


def join(*parts: str | list[str]) -> str:
    return "\n".join(line for part in parts
                     for line in ([part] if isinstance(part, str) else part))


# 5 words a line; each line's job id is its own.
LOG = [f"2024-03-14 09:{i:02d}:00 INFO job-{100 + i} done" for i in range(30)]
TRACE = [line for i in range(12) for line in (
    f'  File "app/mod{i}.py", line {10 + i}, in step{i}', f"    step{i + 1}(payload)")]
TABLE = ["| hour | p99 | errors |"] + [f"| {h:02d}:00 | {200 + h} | {h % 3} |"
                                       for h in range(24)]

# (what, text, cap, the excerpt, lines left out, blocks cut)
CASES: list[tuple[str, str, int, str, int, int]] = [
    # Fences 2 + first line 5 + last line 5 + three head lines 15 = 27 <= 30.
    ("fenced log over the cap",
     join("Here is the log:", "```", LOG, "```", "It stopped after that."), 30,
     join("Here is the log:", "```", LOG[:4], marker(25), LOG[29], "```",
          "It stopped after that."), 25, 1),
    ("fenced log under the cap: unchanged",
     join("Here is the log:", "```", LOG, "```"), 200,
     join("Here is the log:", "```", LOG, "```"), 0, 0),
    ("~~~ fence, unclosed: runs to the end of the text",
     join("Config:", "~~~yaml", LOG), 20,
     join("Config:", "~~~yaml", LOG[:2], marker(27), LOG[29]), 27, 1),
    # An unfenced run: the marker is one more (indented) bulk line of the run.
    ("unfenced log run",
     join("Logs:", LOG, "Then it recovered."), 20,
     join("Logs:", LOG[:3], marker(26), LOG[29], "Then it recovered."), 26, 1),
    # The frames are bulk; the exception after them is prose, sent whole.
    ("stack trace",
     join("Traceback (most recent call last):", TRACE,
          "TimeoutError: waited 30.5s for conn 7"), 30,
     join("Traceback (most recent call last):", TRACE[:8], marker(15), TRACE[23],
          "TimeoutError: waited 30.5s for conn 7"), 15, 1),
    ("table: its header always, then rows while they fit",
     join("Latency by hour:", TABLE, "Peak was at night."), 40,
     join("Latency by hour:", TABLE[:4], marker(20), TABLE[24], "Peak was at night."),
     20, 1),
    ("a line the prose mentions is kept wherever it is",
     join("job-117 failed, see below:", "```", LOG, "```"), 20,
     join("job-117 failed, see below:", "```", LOG[0], marker(16), LOG[17], marker(11),
          LOG[29], "```"), 27, 1),
    ("a specific every line holds keeps the whole block",
     join("All of it happened on 2024-03-14:", "```", LOG, "```"), 20,
     join("All of it happened on 2024-03-14:", "```", LOG, "```"), 0, 0),
    ("the first non-empty line is kept even above the cap, blank lines before it too",
     join("```", "", "   ", LOG, "```"), 3,
     join("```", "", "   ", LOG[0], marker(29), "```"), 29, 1),
    ("several blocks: each over the cap is cut on its own",
     join("First:", "```", LOG[:10], "```", "Second, short:", "```", LOG[:2], "```",
          "Third:", LOG[10:20]), 20,
     join("First:", "```", LOG[:2], marker(7), LOG[9], "```", "Second, short:", "```",
          LOG[:2], "```", "Third:", LOG[10:13], marker(6), LOG[19]), 13, 2),
    ("Japanese prose around a block",
     join("昨日のログです。job-120 が失敗しました。", "```", LOG, "```", "以上です。"), 20,
     join("昨日のログです。job-120 が失敗しました。", "```", LOG[0], marker(19), LOG[20],
          marker(8), LOG[29], "```", "以上です。"), 27, 1),
    ("Spanish prose around a block",
     join("El registro del 15/03/2026, mira job-105:", LOG, "¿Lo ves?"), 20,
     join("El registro del 15/03/2026, mira job-105:", LOG[:2], marker(3), LOG[5],
          marker(23), LOG[29], "¿Lo ves?"), 26, 1),
    ("a marker costing more than the one line it replaces is not used",
     join("```", "alpha", "beta one two three four five six seven eight nine ten eleven",
          "gamma", "```"), 4,
     join("```", "alpha", "beta one two three four five six seven eight nine ten eleven",
          "gamma", "```"), 0, 0),
    ("off when 0", join("```", LOG, "```"), 0, join("```", LOG, "```"), 0, 0),
    ("off when negative", join(LOG), -5, join(LOG), 0, 0),
    ("no bulk at all", "Just a sentence with 3 numbers: 4 and 5.", 1,
     "Just a sentence with 3 numbers: 4 and 5.", 0, 0),
]


@pytest.mark.unit
@pytest.mark.parametrize(("text", "cap", "expected", "left_out", "blocks"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_excerpt_bulk(text: str, cap: int, expected: str, left_out: int, blocks: int) -> None:
    got = excerpt_bulk(text, max_tokens=cap, count=words)
    assert got.text == expected
    assert (got.lines_left_out, got.blocks_cut) == (left_out, blocks)
    assert extract_specifics(got.text) == extract_specifics(text)
    assert excerpt_bulk(text, max_tokens=cap, count=words) == got  # deterministic


@pytest.mark.unit
def test_the_marker_inside_an_unfenced_run_is_read_as_bulk_not_prose() -> None:
    text = join("Logs:", LOG, "Then it recovered.")
    got = excerpt_bulk(text, max_tokens=20, count=words)
    assert marker(26) in got.text.split("\n")
    assert prose(got.text) == prose(text) == ["Logs:", LOG[0], "Then it recovered."]
    assert "26" not in extract_specifics(got.text)


@pytest.mark.unit
def test_excerpt_turns_notes_what_was_left_out() -> None:
    turns = [Turn(1, "user", join("Logs:", LOG)), Turn(2, "assistant", "Looks fine."),
             Turn(3, "user", join("```", LOG, "```"))]
    sent, note = excerpt_turns(turns, max_tokens=20, count=words)
    assert note == "bulk: 53 lines of 2 pasted blocks not sent"
    assert sent[1] is turns[1] and [t.id for t in sent] == [1, 2, 3]
    assert excerpt_turns(turns, max_tokens=0, count=words) == (turns, "")


LINES = st.sampled_from([
    "", "   ", "```", "~~~", "```python", "  ~~~", "｀｀｀", "plain prose",
    "job-117 and 2024-03-14 in prose", "see /etc/app.conf at 09:41", "Ver el 15/03/2026.",
    "価格は3,500円です。", "2024-03-14 09:41:07 INFO job-117 ok", "ERROR pool 20 exhausted",
    "２０２４-０３-１４ 10:00:00 WARN full-width", "    indented code 42", "\tx = 1",
    "| 00:00 | 220 |", '{"level": "info", "n": 3}', "a  b  c 7", "  at Foo.bar(Foo.java:12)",
    '  File "app/db.py", line 88, in connect', "[12:00:01] started 3 workers",
    "    [... 3 lines of this block not sent to the summarizer ...]",
])


@pytest.mark.unit
@settings(max_examples=400, deadline=None)
@given(st.lists(LINES, min_size=1, max_size=40), st.integers(min_value=-1, max_value=40),
       st.sampled_from([words, len]))
def test_the_excerpt_never_adds_a_specific(lines: list[str], cap: int,
                                           count: Callable[[str], int]) -> None:
    text = "\n".join(lines)
    got = excerpt_bulk(text, max_tokens=cap, count=count)
    # The contract is the subset; by construction the excerpt reads exactly the same.
    assert extract_specifics(got.text) <= extract_specifics(text)
    assert extract_specifics(got.text) == extract_specifics(text)
    # What the extractor reads (after NFKC: ｀｀｀ is a fence) is the same lines.
    assert prose(nfkc(got.text)) == prose(nfkc(text))
    if not got.blocks_cut:
        assert got.text == text and got.lines_left_out == 0
    # Every line is an original line, in order, or a marker; the counts add up (read
    # only when no pasted line looks like a marker).
    if not any(line.startswith("    [... ") for line in lines):
        out = got.text.split("\n")
        markers = [m for m in out if m.startswith("    [... ")]
        rest = iter(lines)
        assert all(line in rest for line in out if line not in markers)  # in order
        assert len(out) - len(markers) + got.lines_left_out == len(lines)


@pytest.mark.parametrize("cap", [100, 150])
def test_the_demo_conversation_keeps_every_specific(cap: int) -> None:
    cut = 0
    for _, text in demo_script(1000):
        got = excerpt_bulk(text, max_tokens=cap, count=count_tokens)
        assert extract_specifics(got.text) == extract_specifics(text)
        cut += got.blocks_cut
    assert cut > 400  # most pasted blocks are long
