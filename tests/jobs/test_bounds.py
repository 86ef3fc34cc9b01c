"""Bounds on what a model and a caller can make Recap store: an accepted summary
above its cap is cut to it (the guard keeps what the cut removed) and the next
context stays within its budget; facts are bounded in number and length; a
deeply nested content array is the caller's InvalidInput. Real worker,
PostgreSQL and the real SDK against the local Messages API server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from recap.api.context import build_context
from recap.api.ingest import add_message
from recap.core.content.message import MAX_NESTING
from recap.core.memories.facts import MAX_FACT_CHARS, MAX_FACTS
from recap.errors import InvalidInput
from recap.llm.tokens import count_tokens
from recap.sessions.overrides import memories
from recap.testing import FakeAnthropic, Hostile, hostile_model, ok
from tests.helpers import LOW, assert_invariants, run_and_wait, runs, seed, session_row, statuses

CAP = 256


@pytest.mark.usefixtures("celery_worker_thread")
def test_a_summary_far_above_its_cap_is_never_stored_or_sent(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_MAX_SUMMARY_TOKENS=CAP, RECAP_CONTEXT_BUDGET_TOKENS=2000)
    ids = seed("huge", 12)
    # A model that ignores its cap: about 60,000 tokens of summary.
    fake_api.route(hostile_model(Hostile(oversize_tokens=60_000)))
    run_and_wait("huge", final={"applied", "dead"})
    assert statuses("huge") == ["applied"], runs("huge")[0].error
    row = session_row("huge")
    assert row is not None and row.rolling_summary is not None
    # The model's part within the cap; the guard's details section within its share.
    assert count_tokens(row.rolling_summary) <= CAP * 1.25 + 8
    ctx = build_context("huge", system_prompt="Be brief.")
    assert ctx["tokens"] <= ctx["budget"]
    assert_invariants({"huge": ids})


@pytest.mark.usefixtures("celery_worker_thread")
def test_facts_are_bounded_in_number_and_length(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_EXTRACT_MEMORIES="true")
    seed("many", 12)
    facts: list[dict[str, Any]] = [{"fact": f"The user owns gadget number {i}.",
                                    "category": "fact", "importance": 3} for i in range(300)]
    facts.insert(0, {"fact": "The user wrote " + "very " * 2000 + "long.",
                     "category": "fact", "importance": 5})
    fake_api.script(ok(json.dumps({"summary": "The user listed gadgets.", "facts": facts})))
    run_and_wait("many", final={"applied", "dead"})
    assert statuses("many") == ["applied"], runs("many")[0].error
    stored = memories("many")
    assert 0 < len(stored) <= MAX_FACTS
    assert all(len(m["fact"]) <= MAX_FACT_CHARS for m in stored)


def nested(depth: int) -> dict[str, Any]:
    value: Any = "leaf"
    for _ in range(depth - 1):
        value = {"x": value}
    return value


def tool_call(depth: int) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": nested(depth)}]


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 5_000, 100_000])
def test_deeply_nested_tool_input_is_invalid_input_and_stores_nothing(depth: int) -> None:
    add_message("deep", "user", "look it up")
    with pytest.raises(InvalidInput, match=f"at most {MAX_NESTING} are allowed"):
        add_message("deep", "assistant", tool_call(depth))
    row = session_row("deep")
    assert row is not None and row.message_count == 1


def test_nesting_up_to_the_limit_is_stored() -> None:
    add_message("deep", "user", "look it up")
    # The block itself and the input object take two of the levels.
    add_message("deep", "assistant", tool_call(MAX_NESTING - 2))
    row = session_row("deep")
    assert row is not None and row.message_count == 2
