"""The issue's agent transcript (parallel tool calls, a tool error, thinking, an
image) through ingest -> summarize -> build_context: every context is accepted
by the fake API and by the real SDK's types, units are never split, and the
summarizer sees compact text, never binary data."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings

from recap.api.context import as_request, build_context
from recap.api.ingest import add_message
from recap.testing import FakeAnthropic, validate_messages_request
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from tests.helpers import LOW, assert_invariants, session_row
from tests.sdk_request import sdk_problem
from tests.transcripts import Message, png, scripted, transcripts


def renamed(content: Any, k: int) -> Any:
    """``content`` with its tool ids made unique to repetition ``k``."""
    return json.loads(json.dumps(content).replace('"toolu_', f'"toolu_r{k}_'))


def accepted(sid: str) -> dict[str, Any]:
    ctx = build_context(sid, system_prompt="You are a travel agent.")
    last = ctx["messages"][-1]
    extra = {} if last["role"] == "assistant" and isinstance(last["content"], list) and any(
        b["type"] == "tool_use" for b in last["content"]) else {"user_message": "Next?"}
    body = {"model": "claude-test", "max_tokens": 64, **as_request(ctx, **extra)}
    assert validate_messages_request(body) is None, validate_messages_request(body)
    assert sdk_problem(body) is None, sdk_problem(body)
    return body


def test_agent_transcript_survives_ingest_summaries_and_replay(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**LOW)
    sid = "agent"
    written: list[int] = []
    applied = 0
    for k in range(4):
        for role, content in scripted():
            written.append(add_message(sid, role, renamed(content, k)))
            accepted(sid)
        while summarize(sid, job=Job(task_id=f"t-{k}-{applied}"), res=get_resources(),
                        force=True).status == "applied":
            applied += 1
            accepted(sid)
    assert applied >= 4
    prompts = "\n".join(fake_api.prompts())
    assert "[tool call get_weather (toolu_r0_01): {\"city\": \"Lisbon\"}]" in prompts
    assert "[tool result for toolu_r0_02, error: calendar service timed out]" in prompts
    assert "[image: image/png, 800x600" in prompts
    assert png(800, 600)[:60] not in prompts and "c2lnbmF0dXJl" not in prompts
    row = session_row(sid)
    assert row is not None and row.summary_version == applied
    assert_invariants({sid: written})


def test_rewind_into_summarized_tool_calls_restores_their_blocks(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    from sqlalchemy import select

    from recap import rewind
    from recap.db import transaction
    from recap.models import ChatMessage

    settings_env(**LOW, RECAP_ARCHIVE_SUMMARIZED="true")
    sid = "agent-rewind"
    written = [add_message(sid, role, renamed(content, k)) for k in range(2)
               for role, content in scripted()]
    while summarize(sid, job=Job(task_id="t"), res=get_resources(),
                    force=True).status == "applied":
        pass
    # Back to just after the first tool results (message 3): the parallel calls
    # and their results come back from the archive as the blocks they were.
    rewind(sid, written[2])
    with transaction() as s:
        blocks = list(s.scalars(select(ChatMessage.blocks).where(ChatMessage.session_id == sid)
                                .order_by(ChatMessage.id)))
    assert blocks == [renamed(content, 0) for _, content in scripted()[:3]]
    body = accepted(sid)
    assert [b["tool_use_id"] for b in body["messages"][2]["content"][:2]] == [
        "toolu_r0_01", "toolu_r0_02"]
    assert_invariants({sid: written})


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(transcripts(max_steps=10))
def test_random_transcripts_through_the_database_are_always_accepted(
        fake_api: FakeAnthropic, settings_env: Callable[..., None],
        transcript: list[Message]) -> None:
    settings_env(**LOW)
    sid = f"prop-{uuid.uuid4().hex[:12]}"
    written = [add_message(sid, role, content) for role, content in transcript]
    accepted(sid)
    while summarize(sid, job=Job(task_id=sid), res=get_resources(),
                    force=True).status == "applied":
        accepted(sid)
    assert_invariants({sid: written})
