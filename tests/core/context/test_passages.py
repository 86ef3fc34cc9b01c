"""Passage recall (pure): the lines of an archived message that the newest turn is
about, not only the one naming the cue, within the tokens given."""

from __future__ import annotations

import pytest

from recap.core.context.lookback import (
    RECALL_OPEN,
    Cue,
    Hit,
    asked_keys,
    passage_reads,
    quotes,
    recall_part,
)
from recap.core.context.passages import GAP, Passage, Source, passage, render

pytestmark = pytest.mark.unit


def count(text: str) -> int:
    return len(text.split()) + 1


# A file read: the error code near the top, where it is raised and the hash pinned
# with it 20-30 lines further down, filler in between.
READ = "\n".join(
    ["# ledger fixtures", "ERRORS = {", "    'E-4471': 'balance mismatch',", "}"]
    + [f"def helper_{i}(x):\n    return x + {i}" for i in range(11)]
    + ["def load_ledger(path):", "    if mismatch(path):",
       "        raise LedgerError('E-4471')  # tests/fixtures/ledger.py:88",
       "FIXTURE_SHA = 'pinned 9f2c1e7ab41d'  # fixture hash pinned for E-4471 runs"]
    + [f"def tail_{i}():\n    pass" for i in range(20)])
ASKED = "Where was the E-4471 error raised, and which fixture hash was pinned with it?"


def read_source(text: str = READ) -> Source:
    return Source(7, text, 0, len(text), call='[tool call read_file (toolu_9): '
                  '{"path": "tests/fixtures/ledger.py"}]')


def test_the_passage_holds_the_path_and_hash_far_from_the_cue_line() -> None:
    p = passage(read_source(), asked=asked_keys(ASKED), cue_keys={"i:e4471"},
                label="[tool result · message 7]")
    text, used = render(p, room=120, count=count)
    assert text is not None and used <= 120
    assert "raise LedgerError('E-4471')  # tests/fixtures/ledger.py:88" in text
    assert "9f2c1e7ab41d" in text
    assert "'E-4471': 'balance mismatch'" in text
    # What the output is comes with it: the file read.
    assert text.startswith('- [tool result · message 7] output of [tool call read_file '
                           '(toolu_9): {"path": "tests/fixtures/ledger.py"}]')
    assert f"\n  {GAP}\n" in text  # the left-out lines are marked, not hidden
    assert "def helper_3" not in text


def test_the_whole_original_is_restored_when_it_fits() -> None:
    p = passage(read_source(), asked=asked_keys(ASKED), cue_keys={"i:e4471"},
                label="[tool result · message 7]")
    text, used = render(p, room=10_000, count=count)
    assert text is not None and GAP not in text
    assert all(f"  {line}" in text for line in READ.split("\n") if line)
    assert used == count(text)


def test_a_table_row_matching_region_metric_and_day_beats_one_matching_the_region() -> None:
    rows = ["| day | region | metric | value |"] + [
        f"| 2026-11-{d:02d} | {r} | {m} | {v} |"
        for d in (13, 14, 15) for r in ("APAC", "EMEA") for m, v in
        (("revenue", "9,100"), ("refunds", "1,200" if (d, r) == (14, "APAC") else "310"))]
    source = Source(3, "\n".join(rows), 0, len("\n".join(rows)))
    asked = asked_keys("What was the refunds figure for APAC on the 14th?")
    p = passage(source, asked=asked, cue_keys={"w:apac"}, label="[document · message 3]")
    best = p.lines[p.order[0]]
    assert best == "| 2026-11-14 | APAC | refunds | 1,200 |"
    text, _ = render(p, room=20, count=count)
    assert text is not None and "| 2026-11-14 | APAC | refunds | 1,200 |" in text


def test_a_stretch_read_from_the_middle_drops_its_cut_lines() -> None:
    text = "cut line\nERROR E-4471 at a.py:1\nnext\npartial"
    p = passage(Source(1, text, 500, 5_000), asked=asked_keys("E-4471?"),
                cue_keys={"i:e4471"}, label="[x]")
    assert p.lines == ("ERROR E-4471 at a.py:1", "next") and not p.whole


def test_a_passage_never_exceeds_its_room_and_none_when_nothing_fits() -> None:
    p = passage(read_source(), asked=asked_keys(ASKED), cue_keys={"i:e4471"}, label="[x]")
    for room in range(0, 200, 7):
        text, used = render(p, room=room, count=count)
        assert used <= room and (text is None) == (used == 0)


def test_the_block_quotes_passages_and_lines_within_its_room() -> None:
    chosen = [Cue("e-4471", 4.0)]
    hits = [Hit(0, 7, "user", None, READ[:1600], tool=True),
            Hit(0, 2, "assistant", None, "I saw E-4471 once before.")]
    assert passage_reads(hits, chosen) == [(7, 0), (2, 0)]
    found = quotes(hits, chosen, sources={7: read_source()}, asked=asked_keys(ASKED))
    assert isinstance(found[0], Passage) and isinstance(found[1], str)
    for room in (60, 150, 400, 5_000):
        block, used, quoted = recall_part(found, room=room, count=count)
        assert used <= room
        if block is not None:
            assert block.startswith(RECALL_OPEN) and quoted >= 1
    block, _, quoted = recall_part(found, room=400, count=count)
    assert block is not None and quoted == 2 and "9f2c1e7ab41d" in block
    assert "[assistant · message 2] I saw E-4471 once before." in block


def test_a_code_the_context_names_is_looked_up_for_what_else_its_message_says() -> None:
    from recap.core.context.lookback import cues

    # The summary names the code (a paraphrase), not the hash pinned with it.
    found = cues(ASKED, context="The run hit E-4471 in the ledger fixtures.")
    assert [(c.term, c.held) for c in found][-1] == ("e-4471", True)
    assert all(not c.held for c in found[:-1])
    chosen = [c for c in found if c.held]
    hits = [Hit(0, 7, "user", None, READ[:1600], tool=True)]
    [p] = quotes(hits, chosen, sources={7: read_source()}, asked=asked_keys(ASKED))
    assert isinstance(p, Passage) and p.answers
    # A turn asking nothing of it besides its name quotes nothing: the context has that.
    assert quotes(hits, chosen, sources={7: read_source()},
                  asked=asked_keys("Fix E-4471 now")) == []
    assert quotes(hits, chosen) == []  # nor its line alone
