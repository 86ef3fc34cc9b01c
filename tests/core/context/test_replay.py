"""Content blocks replayed by assemble (pure): tool results right after their
calls, thinking only where the API requires it, images intact; and, as a
property, every random agent transcript gives a request the fake API and the
real SDK's types accept, before and after summaries fold its oldest units."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recap.api.validate import prepare_message
from recap.core.content.render import parse_links
from recap.core.context.assemble import Row, assemble
from recap.core.context.request import as_request
from recap.core.planning import policy
from recap.testing import validate_messages_request
from tests.sdk_request import sdk_problem
from tests.transcripts import Message, call, image, result, scripted, thinking, transcripts

pytestmark = pytest.mark.unit


def rows_of(transcript: list[Message]) -> list[tuple[int, Row, policy.MessageInfo]]:
    out = []
    for i, (role, content) in enumerate(transcript, start=1):
        msg = prepare_message(role, content, False, max_inline_chars=10**6)
        tokens = len(msg.countable or msg.content) + msg.media_tokens
        out.append((i, Row(role, msg.content, tokens, msg.blocks),
                    policy.MessageInfo(i, role, tokens, False, *parse_links(msg.tool_links))))
    return out


def context(rows: list[Row], summary: str | None = None) -> dict[str, Any]:
    return dict(assemble("You are an agent.", rows, summary=summary,
                         summary_tokens=len(summary or ""), budget=10**6, count=len))


def assert_accepted(ctx: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body = {"model": "claude-test", "max_tokens": 64, **as_request(ctx, **extra)}  # type: ignore[arg-type]
    assert validate_messages_request(body) is None, (validate_messages_request(body), body)
    assert sdk_problem(body) is None, (sdk_problem(body), body)
    return body


def test_the_scripted_transcript_replays_as_real_blocks() -> None:
    rows = [r for _, r, _ in rows_of(scripted())]
    messages = assert_accepted(context(rows), user_message="And tomorrow?")["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"] * 5 + ["user"]
    # The image goes back intact; the parallel calls' results follow their turn.
    assert messages[0]["content"][1] == image(800, 600)
    assert [b["type"] for b in messages[1]["content"]] == ["text", "tool_use", "tool_use"]
    assert [b["tool_use_id"] for b in messages[2]["content"]] == ["toolu_01", "toolu_02"]
    assert messages[2]["content"][1]["is_error"] is True
    # Thinking is dropped outside an unfinished tool loop (the API ignores it there).
    assert not any(b.get("type") == "thinking" for m in messages if isinstance(m["content"], list)
                   for b in m["content"])
    assert messages[5]["content"] == ("The photo shows Lisbon's Alfama; 18C and sunny. Your "
                                      "flight TP1234 leaves at 09:40.")


def test_thinking_is_passed_back_in_an_unfinished_tool_loop() -> None:
    transcript: list[Message] = [("user", "Weather?"),
                                 ("assistant", [thinking(), call("toolu_1")]),
                                 ("tool", [result("toolu_1")])]
    rows = [r for _, r, _ in rows_of(transcript)]
    messages = assert_accepted(context(rows))["messages"]
    assert messages[1]["content"] == [thinking(), call("toolu_1")]
    # Still in the loop while the results are being added: the call is last.
    messages = assert_accepted(context(rows[:2]))["messages"]
    assert messages[-1]["content"] == [thinking(), call("toolu_1")]


def test_results_in_separate_rows_join_one_turn_before_the_users_words() -> None:
    transcript: list[Message] = [("user", "Both?"),
                                 ("assistant", [call("toolu_a"), call("toolu_b")]),
                                 ("tool", [result("toolu_b", "B")]),
                                 ("user", "hurry"),
                                 ("tool", [result("toolu_a", "A")])]
    messages = assert_accepted(context([r for _, r, _ in rows_of(transcript)]))["messages"]
    assert [b.get("tool_use_id", b["type"]) for b in messages[2]["content"]] == [
        "toolu_b", "toolu_a", "text"]


def test_unpaired_blocks_are_replayed_as_their_text() -> None:
    transcript: list[Message] = [("assistant", [call("toolu_x")]),
                                 ("user", "never mind, something else"),
                                 ("tool", [result("toolu_gone", "late answer")])]
    rows = [r for _, r, _ in rows_of(transcript)]
    messages = assert_accepted(context(rows))["messages"]
    text = str(messages)
    assert "[tool call get_weather (toolu_x)" in text
    assert "[tool result for toolu_gone: late answer]" in text


def test_string_rows_stay_strings() -> None:
    rows = [Row("user", "hi", 2), Row("assistant", "hello  ", 7)]
    assert context(rows)["messages"] == [{"role": "user", "content": "hi"},
                                         {"role": "assistant", "content": "hello"}]


def _fold(entries: list[tuple[int, Row, policy.MessageInfo]],
          keep: int) -> list[tuple[int, Row, policy.MessageInfo]]:
    t = policy.Thresholds(trigger_messages=keep + 1, trigger_tokens=1, batch_size=3,
                          keep_recent=keep, context_budget_tokens=10**9)
    plan = policy.plan([info for _, _, info in entries], summary_tokens=0, t=t, force=True)
    gone = set(plan.batch_ids)
    return [e for e in entries if e[0] not in gone]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts(), st.integers(1, 4))
def test_every_random_transcript_gives_an_accepted_context(transcript: list[Message],
                                                           keep: int) -> None:
    entries = rows_of(transcript)
    summary = None
    while True:
        ctx = context([r for _, r, _ in entries], summary)
        last = ctx["messages"][-1] if ctx["messages"] else None
        ends_in_call = (last is not None and last["role"] == "assistant"
                        and isinstance(last["content"], list)
                        and any(b["type"] == "tool_use" for b in last["content"]))
        if ctx["messages"] and not ends_in_call:
            assert_accepted(ctx, user_message="next question")
        elif ends_in_call:  # the app adds the results next; the prefix alone is valid
            assert_accepted(ctx)
        folded = _fold(entries, keep)
        if len(folded) == len(entries):
            break
        # The unit rule: a fold never separates a call from its results.
        kept = {e[0] for e in folded}
        gone_calls = {c for i, _, info in entries if i not in kept for c in info.calls}
        gone_answers = {a for i, _, info in entries if i not in kept for a in info.answers}
        assert not gone_calls & {a for _, _, info in folded for a in info.answers}
        assert not gone_answers & {c for _, _, info in folded for c in info.calls}
        entries, summary = folded, "The conversation so far."
