"""Salience (recap.core.retention.salience): which specifics the conversation showed it needs,
and the guard keeping the best-ranked ones and leaving unused tool output to the
archive."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recap.core.prompts.summarize import Turn
from recap.core.retention import guard
from recap.core.retention.entries import entry
from recap.core.retention.salience import Origin, Rank, Voice, rank

pytestmark = pytest.mark.unit


def words(text: str) -> int:
    return len(text.split())


LISTING = "\n".join(["Listing of src/loader.py:", "line 200 calls open()",
                     "line 317 reads LGR-3621 from tests/fixtures/load.py:88",
                     "line 404 returns"])
CALL = '[tool call read (toolu_1): {"path": "src/loader.py"}]'


def transcript() -> list[Voice]:
    return [
        Voice(1, "user", "My flight TP1357 leaves at 9:30 am; fix the loader."),
        Voice(2, "assistant", CALL),
        Voice(3, "user", f"[tool result for toolu_1: {LISTING}]", tool=True),
        Voice(4, "assistant", "The error LGR-3621 comes from the fixture."),
        Voice(5, "user", "Thanks. Which line was it?"),
    ]


def test_each_rank_from_its_evidence() -> None:
    sal = rank(transcript()[:4])
    assert sal.rank("TP1357") is Rank.STATED and sal.origin("TP1357") is Origin.USER
    assert sal.rank("9:30 am") is Rank.STATED
    assert sal.rank("LGR-3621") is Rank.USED and sal.origin("LGR-3621") is Origin.TOOL
    assert sal.rank("317") is Rank.REST and sal.origin("317") is Origin.TOOL
    assert sal.archivable("317") and not sal.archivable("LGR-3621")
    assert not sal.archivable("TP1357")


def test_a_later_mention_makes_a_specific_referred() -> None:
    condensed = transcript()[:3]  # the tool result, before anyone used it
    later = [Voice(6, "user", "Is line 317 the culprit?"),
             Voice(7, "assistant", "Yes, 317 reads LGR-3621.")]
    sal = rank(condensed, later)
    assert sal.rank("317") is Rank.REFERRED and not sal.archivable("317")
    # The assistant's reply after a user turn is a reference, not a use.
    assert sal.rank("LGR-3621") is Rank.REFERRED
    assert sal.rank("404") is Rank.REST and sal.archivable("404")


def test_pasted_text_is_a_document_not_the_users_words() -> None:
    sal = rank([Voice(1, "user", 'My code is QX7K2P. My colleague wrote:\nrefund REF-4410 due')])
    assert sal.rank("QX7K2P") is Rank.STATED
    assert sal.origin("REF-4410") is Origin.DOCUMENT and sal.rank("REF-4410") is Rank.REST
    assert not sal.archivable("REF-4410")  # only tool output stays in the archive alone


def test_the_user_stating_what_a_tool_returned_makes_it_theirs() -> None:
    sal = rank([Voice(1, "user", "[tool result for t: build 5521 failed]", tool=True),
                Voice(2, "user", "Build 5521 is mine, keep it.")])
    assert sal.rank("5521") is Rank.STATED and not sal.archivable("5521")


def test_without_the_archive_nothing_is_left_to_it() -> None:
    import dataclasses
    sal = dataclasses.replace(rank(transcript()[:4]), archive=False)
    assert not sal.archivable("317")


def turns() -> list[Turn]:
    return [Turn(v.id, v.role, v.content) for v in transcript()[:4]]


def test_the_guard_requires_neither_unused_tool_output_nor_counts_it_lost() -> None:
    sal = rank(transcript()[:4])
    needed = guard.required(turns(), None, sal)
    assert {"TP1357", "LGR-3621"} <= needed and not {"317", "404", "200"} & needed
    done = guard.settle(turns=turns(), units=[[1], [2, 3, 4]], previous=None,
                        summary="The user is fixing a loader.", facts=(), details_cap=400,
                        count=words, spill=False, salience=sal)
    assert done.archived >= 3 and done.by_rank[Rank.STATED] >= 2 and done.by_rank[Rank.USED]
    # 317 rides along only as the neighbour of LGR-3621 on its line; 200 and 404 stay
    # in the archive.
    kept = done.summary + "".join(m.fact for m in done.memories)
    assert "line 200" not in kept and "404" not in kept
    assert "TP1357" in done.summary and "LGR-3621" in done.summary


def test_details_hold_the_best_ranked_lines_under_their_origin() -> None:
    sal = rank(transcript()[:4])
    done = guard.settle(turns=turns(), units=[[1], [2, 3, 4]], previous=None,
                        summary="The user is fixing a loader.", facts=(), details_cap=30,
                        count=words, spill=True, salience=sal)
    user = guard.DETAILS_HEADERS[Origin.USER]
    assert user in done.summary
    section = done.summary[done.summary.index(user):]
    assert "TP1357" in section
    # What did not fit is a memory labelled by its origin, never the user's.
    assert all(m.source in ("tool", "assistant", "document", "guard") for m in done.memories)
    assert [o for o, _ in guard.details_sections(done.summary)] == sorted(
        (o for o, _ in guard.details_sections(done.summary)),
        key=list(guard.DETAILS_HEADERS).index)


def test_details_sections_read_back_and_strip_every_header() -> None:
    text = guard.render_details([(Origin.TOOL, "317: line 317 reads"),
                                 (Origin.USER, "TP1357: my flight")])
    summary = f"Prose.\n\n{text}"
    assert guard.details_sections(summary) == [(Origin.USER, "TP1357: my flight"),
                                               (Origin.TOOL, "317: line 317 reads")]
    assert guard.strip_details(summary) == "Prose."


def test_a_saved_line_keeps_the_path_and_hash_stated_next_to_it() -> None:
    said = ("First we ran the loader on the fixture set to see what the tests load, and "
            "LGR-3621 shows up next to it at tests/fixtures/loader_config.py:88 with the "
            "pinned hash a3f9c2d1 from the lockfile of the nightly build.")
    line = entry(said, "LGR-3621")
    assert "tests/fixtures/loader_config.py:88" in line and "a3f9c2d1" in line
    long = "word " * 80 + "LGR-3621 at src/" + "a" * 150 + ".py then more words"
    line = entry(long, "LGR-3621")
    assert len(line) <= guard.MAX_ENTRY_CHARS and "LGR-3621" in line
    assert all(not w.startswith("src/") or w.endswith(".py") for w in line.split())


def test_ranking_is_linear_in_the_text() -> None:
    # A hundred thousand numbers in one tool result: one pass, nothing quadratic.
    big = "[tool result for t: " + " ".join(str(i) for i in range(100_000)) + "]"
    sal = rank([Voice(1, "assistant", CALL), Voice(2, "user", big, tool=True),
                Voice(3, "assistant", "Only 99999 matters.")])
    assert sal.rank("99999") is Rank.USED and sal.archivable("5")


IDS = [f"ID-{i}" for i in range(8)]
KINDS = ["user", "assistant", "tool", "pasted"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.lists(st.sampled_from(IDS), max_size=4)),
                min_size=1, max_size=12), st.integers(0, 12))
def test_what_the_user_stated_is_always_required(script: list[tuple[str, list[str]]],
                                                 cut: int) -> None:
    """Whatever the tools returned and whoever used it, every specific the user
    stated in their own words in a condensed message is required by the guard."""
    voices = []
    for i, (kind, ids) in enumerate(script):
        said = " ".join(ids) or "nothing"
        if kind == "tool":
            voices.append(Voice(i, "user", f"[tool result for t{i}: {said}]", tool=True))
        elif kind == "pasted":
            voices.append(Voice(i, "user", f"Look.\n> {said}"))
        else:
            voices.append(Voice(i, kind, f"About {said}."))
    condensed, later = voices[:cut] or voices[:1], voices[cut:] if cut else voices[1:]
    sal = rank(condensed, later)
    turns = [Turn(v.id, v.role, v.content) for v in condensed]
    needed = guard.required(turns, None, sal)
    stated = {s for (kind, ids), _ in zip(script, condensed, strict=False) if kind == "user"
              for s in ids}
    assert stated <= needed
    for s in stated:
        assert sal.rank(s) is Rank.STATED
