"""Replies with server tools, MCP and compaction blocks replayed by the context
builder: unchanged and in place, each server call with its result, a compaction
opening the conversation, every context accepted by the fake API and the SDK's
beta types; a fold never splits a call from its result (pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recap.core.context.assemble import Row, assemble
from recap.core.context.replay import compaction_start
from recap.core.context.request import as_request
from recap.core.planning import policy
from recap.testing import validate_messages_request
from tests.core.context.test_replay import rows_of
from tests.sdk_request import sdk_problem
from tests.server_blocks import (
    FUTURE,
    as_stored,
    compaction,
    mcp_reply,
    tools_reply,
    web_search_reply,
)
from tests.transcripts import Message, thinking

pytestmark = pytest.mark.unit


def context(rows: list[Row], *, caching: bool = False) -> dict[str, Any]:
    return dict(assemble("You are an agent.", rows, summary="Earlier: trip planning.",
                         summary_tokens=10, budget=10**6, count=len, caching=caching))


def accepted(ctx: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body = {"model": "claude-test", "max_tokens": 64, **as_request(ctx, **extra)}  # type: ignore[arg-type]
    assert validate_messages_request(body) is None, (validate_messages_request(body), body)
    assert sdk_problem(body, beta=True) is None, (sdk_problem(body, beta=True), body)
    return body


def rows(transcript: list[Message]) -> list[Row]:
    return [r for _, r, _ in rows_of(transcript)]


def test_server_tool_replies_are_replayed_unchanged_in_place() -> None:
    replies = [web_search_reply(), tools_reply(), mcp_reply()]
    transcript: list[Message] = [("user", "Plan my day in Lisbon.")]
    for reply in replies:
        transcript += [("assistant", reply), ("user", "Thanks, and?")]
    for caching in (False, True):
        messages = accepted(context(rows(transcript), caching=caching))["messages"]
        got = [m["content"] for m in messages[1::2]]
        if caching:  # the breakpoint is on the last turn only, a user one
            assert messages[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
        assert got == [as_stored(r) for r in replies]


def test_a_call_paused_before_its_result_is_one_turn_and_one_unit() -> None:
    reply = web_search_reply()
    transcript: list[Message] = [("user", "Weather?"), ("assistant", reply[:2]),
                                 ("assistant", reply[2:]), ("user", "ok")]
    entries = rows_of(transcript)
    messages = accepted(context([r for _, r, _ in entries]))["messages"]
    assert messages[1]["content"] == as_stored(reply)
    units = policy.units([info for _, _, info in entries])
    assert [[m.id for m in u] for u in units] == [[1], [2, 3], [4]]


def test_a_server_block_without_its_partner_is_replayed_as_text() -> None:
    reply = web_search_reply()
    # The call's turn is gone (folded): its result alone cannot be a block.
    messages = accepted(context(rows([("assistant", reply[2:]), ("user", "so?")])))["messages"]
    assert messages[1]["content"][0] == {"type": "text", "text": (
        "[web search result for srvtoolu_ws1: Lisbon climate <https://weather.example/lisbon>;"
        " May in Portugal <https://travel.example/may>]")}
    # A call never answered, before another turn: text; as the last turn: kept.
    transcript: list[Message] = [("user", "Search"), ("assistant", reply[:2])]
    last = accepted(context(rows(transcript)))["messages"][-1]
    assert last["content"] == as_stored(reply[:2])
    transcript.append(("user", "never mind"))
    middle = accepted(context(rows(transcript)), user_message="hi")["messages"][1]
    assert middle["content"][1]["type"] == "text"
    assert middle["content"][1]["text"].startswith("[server tool call web_search")


def test_thinking_stays_in_a_paused_server_tool_turn_only() -> None:
    reply = [thinking(), *web_search_reply()[1:3]]
    paused: list[Message] = [("user", "Search"), ("assistant", reply)]
    assert accepted(context(rows(paused)))["messages"][-1]["content"] == as_stored(reply)
    answered = [*paused, ("user", "Thanks")]
    turn = accepted(context(rows(answered)))["messages"][1]["content"]
    assert turn == as_stored(reply[1:])


def test_the_newest_compaction_opens_the_conversation() -> None:
    older, newer = compaction("Older summary."), compaction()
    transcript: list[Message] = [
        ("user", "Hi"), ("assistant", [older]), ("user", "Plan a trip"),
        ("assistant", [{"type": "text", "text": "Sure."}]), ("user", "Lisbon"),
        ("assistant", [newer, {"type": "text", "text": "Lisbon it is."}]),
        ("user", "Weather?"), ("assistant", [compaction(None),
                                             {"type": "text", "text": "Sunny."}])]
    entries = rows_of(transcript)
    ctx = context([r for _, r, _ in entries])
    messages = accepted(ctx, user_message="Thanks")["messages"]
    assert messages[0] == {"role": "assistant",
                           "content": [newer, {"type": "text", "text": "Lisbon it is."}]}
    assert json.dumps(messages[0]["content"][0]) == json.dumps(newer)
    # The compaction without a summary (a no-op to the API) is left out there.
    assert messages[2] == {"role": "assistant", "content": [{"type": "text", "text": "Sunny."}]}
    # Tokens count what is replayed: the rows from the newest compaction on.
    assert ctx["tokens"] - context([r for _, r, _ in entries[5:]])["tokens"] == 0


def test_a_breakpoint_skips_a_block_of_an_unknown_type() -> None:
    transcript: list[Message] = [("user", [{"type": "text", "text": "Show me"}, dict(FUTURE)])]
    messages = context(rows(transcript), caching=True)["messages"]
    assert messages[0]["content"] == [{"type": "text", "text": "Show me",
                                       "cache_control": {"type": "ephemeral"}}, FUTURE]


def _renamed(reply: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    text = json.dumps(reply).replace('"srvtoolu_', f'"srvtoolu_r{k}_')
    return list(json.loads(text.replace('"mcptoolu_', f'"mcptoolu_r{k}_')))


@st.composite
def server_transcripts(draw: st.DrawFn) -> list[Message]:
    """User turns and replies of server tools, some paused between a call and its
    result (two assistant rows), some opened by a compaction."""
    out: list[Message] = []
    for k in range(draw(st.integers(1, 7))):
        out.append(("user", f"question {k}"))
        reply = _renamed(draw(st.sampled_from([web_search_reply(), tools_reply(),
                                               mcp_reply()])), k)
        if draw(st.booleans()):
            reply = [compaction(f"summary {k}"), *reply]
        cut = draw(st.integers(0, len(reply) - 1))
        out += [("assistant", reply[:cut]), ("assistant", reply[cut:])] if cut else [
            ("assistant", reply)]
    return out


def live_texts(live: list[Row]) -> list[dict[str, Any]]:
    return [b for r in live for b in r.blocks or () if b["type"] == "text"]


def _fold(entries: list[Any], keep: int) -> list[Any]:
    t = policy.Thresholds(trigger_messages=keep + 1, trigger_tokens=1, batch_size=3,
                          keep_recent=keep, context_budget_tokens=10**9)
    plan = policy.plan([info for _, _, info in entries], summary_tokens=0, t=t, force=True)
    return [e for e in entries if e[0] not in set(plan.batch_ids)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(server_transcripts(), st.integers(1, 4))
def test_folds_never_split_a_server_call_from_its_result(transcript: list[Message],
                                                         keep: int) -> None:
    entries = rows_of(transcript)
    while True:
        live = [r for _, r, _ in entries]
        messages = accepted(context(live), user_message="next")["messages"]
        sent = [b for m in messages if isinstance(m["content"], list) for b in m["content"]]
        # Every block from the newest compaction on is replayed as it is stored:
        # none became text, as its partner always went (or stayed) with it.
        start = compaction_start([(r.role, r.content, r.blocks) for r in live])
        assert [b for r in live[start:] for b in r.blocks or ()] == [
            b for b in sent if b["type"] != "text" or b in live_texts(live[start:])]
        folded = _fold(entries, keep)
        if len(folded) == len(entries):
            break
        entries = folded
