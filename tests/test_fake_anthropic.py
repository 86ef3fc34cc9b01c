"""The fake Messages API's own rules where Recap relies on them matching the API:
``cache_control`` placement and the prompt-cache usage it reports."""

from __future__ import annotations

from typing import Any

import pytest

from recap.testing import fake_tokens, request_usage, validate_messages_request

pytestmark = pytest.mark.unit

CC = {"type": "ephemeral"}


def body(system: Any = None, messages: Any = None, tools: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"model": "m", "max_tokens": 8,
                           "messages": messages or [{"role": "user", "content": "hi"}]}
    if system is not None:
        out["system"] = system
    if tools is not None:
        out["tools"] = tools
    return out


def text(t: str, cc: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "text", "text": t, **({"cache_control": cc} if cc else {})}


def test_four_breakpoints_across_tools_system_and_messages_are_the_limit() -> None:
    tool = {"name": "t", "input_schema": {"type": "object"}, "cache_control": CC}
    four = body([text("a", CC), text("b", CC)],
                [{"role": "user", "content": [text("c", CC)]}], tools=[tool])
    assert validate_messages_request(four) is None
    five = body([text("a", CC), text("b", CC)],
                [{"role": "user", "content": [text("c", CC), text("d", CC)]}], tools=[tool])
    assert validate_messages_request(five) == (
        "A maximum of 4 blocks with cache_control may be provided. Found 5.")


@pytest.mark.parametrize(("cc", "problem"), [
    ({"type": "persistent"}, "system.0.cache_control.type: Input should be 'ephemeral'"),
    ({"type": "ephemeral", "scope": "x"}, "system.0.cache_control.scope: Extra inputs"),
    ({"type": "ephemeral", "ttl": "10m"}, "system.0.cache_control.ttl: Input should be '5m'"),
    ({"type": "ephemeral", "ttl": "1h"}, None),
])
def test_only_ephemeral_with_a_known_ttl(cc: dict[str, Any], problem: str | None) -> None:
    found = validate_messages_request(body([text("a", cc)]))
    assert found == problem if problem is None else found and found.startswith(problem)


def test_a_1h_breakpoint_may_not_follow_a_5m_one() -> None:
    hour = {"type": "ephemeral", "ttl": "1h"}
    assert validate_messages_request(body([text("a", hour), text("b", CC)])) is None
    problem = validate_messages_request(body([text("a", CC), text("b", hour)]))
    assert problem and "ttl='1h'" in problem and "system.1" in problem


def test_no_breakpoint_on_an_empty_text_or_a_thinking_block() -> None:
    assert "cannot be set for empty text blocks" in str(
        validate_messages_request(body([text("  ", CC)])))
    thinking = {"type": "thinking", "thinking": "hm", "signature": "s", "cache_control": CC}
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": [thinking]},
            {"role": "user", "content": "go"}]
    assert "messages.1.content.0.thinking.cache_control" in str(
        validate_messages_request(body(messages=msgs)))


def test_usage_reads_the_longest_prefix_written_before() -> None:
    cache: set[bytes] = set()
    sys = [text("S" * 700, CC)]
    first = body(sys, [{"role": "user", "content": [text("q" * 350, CC)]}])
    second = body(sys, [{"role": "user", "content": "q" * 350},
                        {"role": "assistant", "content": "a" * 35},
                        {"role": "user", "content": [text("r" * 35, CC)]}])
    u1, u2 = request_usage(first, cache), request_usage(second, cache)
    assert (u1["input_tokens"], u1["cache_read_input_tokens"]) == (0, 0)
    assert u1["cache_creation_input_tokens"] == request_usage(first)["input_tokens"]
    assert u2["cache_read_input_tokens"] == u1["cache_creation_input_tokens"]
    assert sum(u2.values()) == request_usage(second)["input_tokens"]  # the same total
    # A changed system block (a new summary) misses the whole prefix.
    third = body([text("T" * 700, CC)], second["messages"])
    assert request_usage(third, cache)["cache_read_input_tokens"] == 0
    # Without breakpoints everything is input, counted as ceil(chars / 3.5).
    plain = body("x" * 7, [{"role": "user", "content": "y" * 2}])
    assert request_usage(plain, cache) == {"input_tokens": fake_tokens(7 + len("user:yy")),
                                           "cache_creation_input_tokens": 0,
                                           "cache_read_input_tokens": 0}


def test_a_breakpoint_is_not_part_of_the_prefix_it_ends() -> None:
    # A tool result cached with the breakpoint on it is read by the next request,
    # which sends the same block without it (the breakpoint moved to the newest turn).
    def result(cc: dict[str, Any] | None) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "r" * 700}
        return {**block, **({"cache_control": cc} if cc else {})}

    call = {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}}]}
    ask = {"role": "user", "content": "q" * 35}
    cache: set[bytes] = set()
    first = request_usage(body(None, [ask, call, {"role": "user", "content": [result(CC)]}]),
                          cache)
    second = request_usage(body(None, [ask, call, {"role": "user", "content": [result(None)]},
                                       {"role": "assistant", "content": "a" * 35},
                                       {"role": "user", "content": [text("b" * 35, CC)]}]),
                           cache)
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"] > 0
