"""The spec's end-to-end scenarios with default thresholds and a running worker."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from recap.api.context import as_request, build_context
from recap.api.ingest import add_message, after_reply
from recap.core.context.assemble import MEMORIES_CLOSE, MEMORIES_OPEN, content_text, system_text
from recap.core.planning.adaptive import MEMORIES_TIMES
from recap.db import transaction
from recap.llm.tokens import count_tokens, split_by_tokens
from recap.sessions.overrides import memories
from recap.settings import get_settings
from recap.testing import FakeAnthropic, Reply, Request, ok, tool_input, validate_messages_request
from tests.checks import check_invariants
from tests.env import ROOT
from tests.helpers import runs, session_of, session_row, statuses, wait_for

pytestmark = pytest.mark.usefixtures("celery_worker_thread")


@pytest.fixture(autouse=True)
def guarded(settings_env: Callable[..., None]) -> None:
    settings_env(RECAP_RETENTION_GUARD="true")

CONVERSATION = ROOT / "recap" / "demo" / "conversation.json"


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
    written, texts = [], {}
    # 30 x ~870 tokens reaches 80% of the 32,000-token budget at the 30th message.
    for role, text in long_messages(30, target=875):
        written.append(add_message(sid, role, text))
        texts[written[-1]] = text
        if role == "assistant":
            after_reply(sid)
    wait_for(lambda: "applied" in statuses(sid) and idle(sid), timeout=60, what="summary")
    ctx = build_context(sid, system_prompt="You are a helpful SRE assistant.")
    assert "<SUMMARY_OF_PRIOR_CONTEXT>" in system_text(ctx["system"])
    # The summary carries the specifics of what it condensed (retention guard), and
    # the memories block (up to RECAP_MEMORY_BUDGET_TOKENS, 2,000) the facts mined.
    assert ctx["tokens"] < 13_000
    assert validate_messages_request({"model": "m", "max_tokens": 10, **as_request(
        ctx, user_message="What next?")}) is None
    with transaction() as s:
        assert check_invariants(s, written={sid: written}, written_texts={sid: texts}) == []


def mine_user_turns(fake_api: FakeAnthropic) -> None:
    """Answer every summary call (the record_summary tool) with its default summary
    and one fact per user message of its batch (its first words), so memories pile
    up far beyond what a context can show."""

    @fake_api.route
    def mined(request: Request) -> Reply | None:
        if request.tool is None:
            return None
        turns = re.findall(r'<message role="user">\n(.*?)\n</message>', request.prompt, re.S)
        data = tool_input(request.body, request.prompt, None, fraction=0.0, seed=0)
        data["facts"] = [{"fact": "The user wrote: " + " ".join(t.split()[:10]),
                          "category": "fact", "importance": 1 + i % 5}
                         for i, t in enumerate(turns)]
        return ok(json.dumps(data))


def test_a_thousand_message_conversation_stays_within_budget(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    # With memories on: mined from every batch, shown in every context.
    settings_env(RECAP_EXTRACT_MEMORIES="true")
    mine_user_turns(fake_api)
    sid = "spec-1000"
    settings = get_settings()
    budget = settings.context_budget_tokens
    written, peaks, texts = [], [], {}
    for i, (role, text) in enumerate(conversation(1000)):
        written.append(add_message(sid, role, text, user_id="spec-user"))
        texts[written[-1]] = text
        if role == "assistant":
            after_reply(sid)
        if i % 100 == 99:  # let the worker catch up, then look at the context
            wait_for(lambda: idle(sid), timeout=60, what="worker caught up")
            ctx = build_context(sid, system_prompt="You are helpful.")
            peaks.append(ctx["tokens"])
            assert ctx["tokens"] <= budget, (i, ctx["tokens"])
            if "applied" in statuses(sid):
                shown = "\n".join([system_text(ctx["system"]),
                                   *(content_text(m["content"]) for m in ctx["messages"])])
                block = shown[shown.index(MEMORIES_OPEN):]
                block = block[:block.index(MEMORIES_CLOSE) + len(MEMORIES_CLOSE)]
                # The adaptive policy's block: at most MEMORIES_TIMES the setting.
                limit = MEMORIES_TIMES * settings.memory_budget_tokens
                assert count_tokens(block) <= limit, i
    assert statuses(sid).count("applied") >= 10
    assert "dead" not in statuses(sid)
    assert len(memories(sid)) > 100  # far more than one context shows
    # Bounded cost: each message went to the model about once; a message the
    # retention guard held back goes again, at most once (1.19-1.54x measured with
    # the fake, whose summaries are capped at 3 x max_tokens characters); a fold whose
    # answer was refused as frozen sends its batch again once per refusal (this
    # fake's digests often add none of a batch's new words).
    sent = sum(p.count("<message role=") for p in fake_api.prompts())
    asked_again = sum((r.frozen_answers or 0) * r.messages_condensed for r in runs(sid))
    assert sent <= 2 * (len(written) - session_of(sid).message_count) + asked_again
    with transaction() as s:
        assert check_invariants(s, written={sid: written}, written_texts={sid: texts}) == []
