"""The spec's end-to-end scenarios with default thresholds and a running worker."""

from __future__ import annotations

import json

import pytest

from tests.env import ROOT
from worker.evals.fake_api import FakeAnthropic, validate_messages_request
from tests.helpers import session_row, statuses, wait_for
from worker.api.context import as_request, build_context
from worker.api.ingest import add_message, after_reply
from worker.checks import check_invariants
from worker.db import transaction
from worker.llm.tokens import split_by_tokens
from worker.settings import get_settings

pytestmark = pytest.mark.usefixtures("celery_worker_thread")

CONVERSATION = ROOT / "worker" / "demo" / "conversation.json"


def conversation(n: int) -> list[tuple[str, str]]:
    """The first ``n`` messages of the demo conversation, from its data file."""
    messages = json.loads(CONVERSATION.read_text(encoding="utf-8"))
    assert len(messages) >= n
    return [(m["role"], m["content"]) for m in messages[:n]]


def idle(sid: str) -> bool:
    row = session_row(sid)
    return row is not None and row.lease_token is None and row.enqueued_at is None


def long_messages(n: int, *, target: int) -> list[tuple[str, str]]:
    """``n`` alternating turns of ``target`` tokens each (pasted logs and configs)."""
    stream = "\n".join(text for _, text in conversation(400))
    parts = split_by_tokens(stream, target)
    return [("user" if i % 2 == 0 else "assistant", parts[i].strip()) for i in range(n)]


def test_thirty_long_messages_end_with_a_summary_and_a_small_context(
        fake_api: FakeAnthropic) -> None:
    sid = "spec-30"
    written = []
    # 30 x ~870 tokens reaches 80% of the 32,000-token budget at the 30th message.
    for role, text in long_messages(30, target=875):
        written.append(add_message(sid, role, text))
        if role == "assistant":
            after_reply(sid)
    wait_for(lambda: "applied" in statuses(sid) and idle(sid), timeout=60, what="summary")
    ctx = build_context(sid, system_prompt="You are a helpful SRE assistant.")
    assert "<SUMMARY_OF_PRIOR_CONTEXT>" in ctx["system"]
    assert ctx["tokens"] < 10_000
    assert validate_messages_request({"model": "m", "max_tokens": 10, **as_request(
        ctx, user_message="What next?")}) is None
    with transaction() as s:
        assert check_invariants(s, written={sid: written}) == []


def test_a_thousand_message_conversation_stays_within_budget(fake_api: FakeAnthropic) -> None:
    sid = "spec-1000"
    budget = get_settings().context_budget_tokens
    written, peaks = [], []
    for i, (role, text) in enumerate(conversation(1000)):
        written.append(add_message(sid, role, text))
        if role == "assistant":
            after_reply(sid)
        if i % 100 == 99:  # let the worker catch up, then look at the context
            wait_for(lambda: idle(sid), timeout=60, what="worker caught up")
            tokens = build_context(sid, system_prompt="You are helpful.")["tokens"]
            peaks.append(tokens)
            assert tokens <= budget, (i, tokens)
    assert statuses(sid).count("applied") >= 10
    assert "dead" not in statuses(sid)
    # Bounded cost: each message went to the model about once.
    sent = sum(p.count("<message role=") for p in fake_api.prompts())
    assert sent <= 1.05 * (len(written) - session_row(sid).message_count)  # type: ignore[union-attr]
    with transaction() as s:
        assert check_invariants(s, written={sid: written}) == []
