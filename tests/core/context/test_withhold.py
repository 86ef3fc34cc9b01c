"""Leaving the window's oldest rows out for room (pure): the row holding what the
newest turn names is kept, or quoted in the recall block when it is too big;
every turn added is counted, the placeholder included, so the recall block gets
the room computed for it; and, as a property over random windows, the request
stays within the budget, valid for the Messages API, and carries the named row."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recap.core.context.assemble import (
    PLACEHOLDER_WITHHELD,
    Context,
    Row,
    assemble,
    content_text,
    system_text,
)
from recap.core.context.lookback import RECALL_OPEN, recall_part
from recap.core.context.withhold import named_rows, quotes
from recap.core.memories.recall import Candidate
from tests.core.context.test_replay import assert_accepted, rows_of
from tests.transcripts import transcripts

pytestmark = pytest.mark.unit

PROMPT = "You are a careful assistant."
SUMMARY = "Earlier: the user set up a ledger service."
NAMED = "The staging database is db-7731.internal on port 5433."
QUESTION = "Which port does db-7731.internal listen on?"
# An archived line recall found for another word of the question.
ARCHIVED = "- [tool result · message 3] ERROR LGR-3621 raised at src/ledger/loader.py:212"


def rows(*pairs: tuple[str, str]) -> list[Row]:
    return [Row(role, content, len(content), id=i) for i, (role, content) in enumerate(pairs)]


def build(window: list[Row], *, budget: int, keep: int = 1, recalled: tuple[str, ...] = (),
          recall_room: int = 600, **extra: Any) -> Context:
    return assemble(PROMPT, window, summary=SUMMARY, summary_tokens=len(SUMMARY),
                    budget=budget, count=len, recalled=recalled, recall_room=recall_room,
                    keep_recent=keep, **extra)


def request_text(ctx: Context) -> str:
    return system_text(ctx["system"]) + "".join(content_text(m["content"])
                                                for m in ctx["messages"])


def carries(ctx: Context, text: str) -> bool:
    """Whether ``text`` (not in the newest turn) is in the request."""
    return text in request_text(ctx)


WINDOW = [("assistant", NAMED), ("user", "u" * 300), ("assistant", "a" * 300),
          ("user", "v" * 300), ("assistant", "b" * 300), ("user", QUESTION)]


def test_the_row_the_newest_turn_names_is_the_one_not_left_out() -> None:
    whole = build(rows(*WINDOW), budget=10_000, recalled=(ARCHIVED,))
    assert whole["parts"]["withheld"] == 0
    ctx = build(rows(*WINDOW), budget=1000, recalled=(ARCHIVED,))
    # The four long rows after it go, the named one stays (opened by the placeholder).
    assert ctx["parts"]["withheld"] == 4 and ctx["parts"]["recalled"] == 1
    assert [m["content"] for m in ctx["messages"]] == [PLACEHOLDER_WITHHELD, NAMED, QUESTION]
    assert ARCHIVED in system_text(ctx["system"]) and ctx["tokens"] <= 1000
    assert ctx["tokens"] == len(request_text(ctx))  # every character counted
    assert_accepted(dict(ctx))
    # Nothing the recall block needs: the whole window, over the budget as stored.
    plain = build(rows(*WINDOW), budget=1000, recall_room=0)
    assert plain["parts"]["withheld"] == 0 and plain["tokens"] > 1000


def test_a_named_row_too_big_to_keep_is_quoted_in_the_recall_block() -> None:
    log = "\n".join([*(f"step {i} ok" for i in range(200)), NAMED,
                     *(f"teardown {i}" for i in range(200))])
    window = rows(("tool", log), *WINDOW[1:])
    ctx = build(window, budget=1000, recalled=(ARCHIVED,))
    assert ctx["parts"]["withheld"] == 5 and ctx["parts"]["recalled"] == 2
    recall = system_text(ctx["system"]).split(RECALL_OPEN)[1]
    # Quoted first, as recall quotes an archived message: its line, labelled.
    assert recall.startswith(f"- [tool result · message 0] {NAMED}\n  teardown 0\n")
    assert ARCHIVED in recall and ctx["tokens"] <= 1000
    assert [m["content"] for m in ctx["messages"]] == [QUESTION]
    # Without a recall block to quote it in, it is kept: the window alone fits.
    kept = build(window, budget=6000, recall_room=0, per_reply=3000)
    assert carries(kept, NAMED) and kept["parts"]["withheld"] == 4


def test_the_newest_row_holding_a_named_word_carries_it_unless_the_summary_does() -> None:
    window = rows(*WINDOW)
    assert named_rows(window, elsewhere=SUMMARY) == {0: ["db-7731.internal"]}
    assert named_rows(window, elsewhere="db-7731.internal was set up.") == {}
    again = rows(*WINDOW[:-1], ("assistant", "Still db-7731.internal."), ("user", QUESTION))
    assert named_rows(again, elsewhere="") == {5: ["db-7731.internal"]}
    assert quotes(window[0], ["db-7731.internal"]) == [f"- [assistant · message 0] {NAMED}"]


@pytest.mark.parametrize("budget", range(1000, 1016))
def test_the_placeholder_is_counted_so_the_recall_block_keeps_its_room(budget: int) -> None:
    """Short turns: the rows left out free about what the block needs, and a window
    that then opens with the assistant's turn gets the placeholder; it is counted,
    so the block is never the few tokens short that would drop it."""
    short = [("assistant" if i % 2 == 0 else "user", f"turn {i:03}") for i in range(250)]
    ctx = build(rows(*short, ("user", "What was LGR-3621 about?")), budget=budget,
                recalled=(ARCHIVED,), keep=2)
    assert ctx["parts"]["withheld"] > 200 and ctx["parts"]["recalled"] == 1
    assert ctx["tokens"] == len(request_text(ctx)) <= budget
    assert_accepted(dict(ctx))


_memory = Candidate(1, "The user's dentist is Soren Wierzbicki.", 3, rank=1.0)


@st.composite
def windows(draw: st.DrawFn) -> tuple[list[Row], int]:
    """A random window (an agent transcript, or many short turns) with the named
    row somewhere before the newest turn, which names it; and the named row's index."""
    if draw(st.booleans()):
        window = [r for _, r, _ in rows_of(draw(transcripts(max_steps=20)))]
    else:
        first = draw(st.sampled_from(["user", "assistant"]))
        other = "assistant" if first == "user" else "user"
        window = [Row(first if i % 2 == 0 else other, f"short turn {i}", 11 + len(str(i)))
                  for i in range(draw(st.integers(1, 300)))]
    big = draw(st.booleans())
    text = ("\n".join([*(f"line {i}" for i in range(80)), NAMED]) if big else NAMED)
    at = draw(st.integers(0, len(window)))
    window.insert(at, Row(draw(st.sampled_from(["user", "assistant", "tool"])), text,
                          len(text), id=10_000))
    return [*window, Row("user", QUESTION, len(QUESTION))], at


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(windows(), st.integers(200, 6000), st.integers(1, 4), st.integers(0, 800),
       st.booleans(), st.booleans())
def test_every_window_stays_in_budget_valid_and_carries_the_named_row(
        drawn: tuple[list[Row], int], budget: int, keep: int, recall_room: int,
        memories: bool, caching: bool) -> None:
    window, at = drawn
    extra: dict[str, Any] = (dict(memories=[_memory], memory_budget=200, memories_cached=True,
                                  topical=[_memory], topical_budget=100) if memories else {})
    ctx = build(window, budget=budget, keep=keep, recalled=(ARCHIVED,),
                recall_room=recall_room, caching=caching, **extra)
    # The floor: the newest ``keep`` rows alone, opened by the longest placeholder.
    floor = build(window[-keep:], budget=10**9, recall_room=0)["tokens"] + len(
        PLACEHOLDER_WITHHELD)
    # Something asks for room (else the window goes as stored, to be folded).
    asks = memories or recall_part([ARCHIVED], room=recall_room, count=len)[0] is not None
    if asks and budget >= floor:
        assert ctx["tokens"] <= budget, (ctx["tokens"], budget, ctx["parts"])
    if not caching and all(r.blocks is None for r in window):
        assert ctx["tokens"] == len(request_text(ctx))
    body = assert_accepted(dict(ctx))
    named = window[at]
    # Carried whenever it fits kept whole (or is among the newest rows), or its
    # line fits the recall block.
    if not asks or budget >= floor + named.token_count + 10 or at >= len(window) - keep:
        assert carries(ctx, NAMED), (ctx["parts"], json.dumps(body)[:2000])
