"""Replies of Claude's server tools folded by the summarize job against the fake
Messages API: archived as they came (on SQLite's JSON text, key order too), the
summarizer shown short text and never an encrypted payload or signature, every
context after a fold accepted by the fake API and the SDK's beta types."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sqlalchemy import select

from recap.api.context import as_request, build_context
from recap.api.ingest import add_message, after_reply
from recap.db import transaction
from recap.models import ArchivedMessage, ChatMessage
from recap.testing import FakeAnthropic, validate_messages_request
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from tests.env import TEST_ENV
from tests.helpers import LOW, assert_invariants, join_worker, statuses
from tests.jobs.test_sqlite import sqlite_url  # noqa: F401 (a fixture)
from tests.sdk_request import sdk_problem
from tests.server_blocks import (
    ENCRYPTED,
    FUTURE,
    SIGNATURE,
    as_stored,
    compaction,
    mcp_reply,
    tools_reply,
    web_search_reply,
)
from tests.transcripts import Message


def conversation() -> list[Message]:
    """Server tool replies, one paused between its call and its result, a block of a
    later type, then a compaction and what follows it."""
    search = web_search_reply()
    return [("user", "Plan my day in Lisbon."), ("assistant", search[:2]),
            ("assistant", search[2:]), ("user", "Show me the map"),
            ("assistant", [dict(FUTURE), {"type": "text", "text": "Here it is."}]),
            ("user", "What else?"), ("assistant", tools_reply()),
            ("user", "My evening?"), ("assistant", mcp_reply()),
            ("user", "Recap, please"), ("assistant", [compaction()]),
            ("user", "Thanks, and tomorrow?"), ("assistant", "Tomorrow: Sintra.")]


def archived(sid: str) -> list[tuple[int, Any]]:
    with transaction() as s:
        return list(s.execute(select(ArchivedMessage.id, ArchivedMessage.blocks)
                              .where(ArchivedMessage.session_id == sid)
                              .order_by(ArchivedMessage.id)).all())


def active(sid: str) -> list[Any]:
    with transaction() as s:
        return list(s.scalars(select(ChatMessage.blocks).where(ChatMessage.session_id == sid)
                              .order_by(ChatMessage.id)))


def accepted(sid: str) -> dict[str, Any]:
    ctx = build_context(sid, system_prompt="You plan trips.")
    body = {"model": "claude-test", "max_tokens": 64, **as_request(ctx, user_message="Next?")}
    assert validate_messages_request(body) is None, validate_messages_request(body)
    assert sdk_problem(body, beta=True) is None, sdk_problem(body, beta=True)
    return body


def fold_all(sid: str) -> int:
    """Folds applied to ``sid``: by a worker this process runs (the hook queues jobs
    as messages arrive), then by forced jobs until nothing is left to fold."""
    join_worker(TEST_ENV["RECAP_QUEUE"])
    applied = 0
    while summarize(sid, job=Job(task_id=f"t-{applied}"), res=get_resources(),
                    force=True).status == "applied":
        applied += 1
        accepted(sid)
    return statuses(sid).count("applied")


def run_conversation(sid: str) -> tuple[list[int], dict[int, Any]]:
    sent = {}
    written = []
    for role, content in conversation():
        written.append(add_message(sid, role, content))
        sent[written[-1]] = content
        after_reply(sid)
    return written, sent


def test_server_blocks_are_folded_and_archived_as_they_came(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_ARCHIVE_SUMMARIZED="true")
    sid = "server-blocks-fold"
    written, sent = run_conversation(sid)
    # Before any fold the replay opens with the compaction; nothing before it is sent.
    assert accepted(sid)["messages"][0]["content"][0] == compaction()
    assert fold_all(sid) >= 2
    rows = archived(sid)
    assert rows and all(blocks == (as_stored(sent[i]) if isinstance(sent[i], list) else None)
                        for i, blocks in rows)
    assert [i for i, _ in rows] == written[:len(rows)]
    prompts = "\n".join(fake_api.prompts())
    assert ENCRYPTED not in prompts and SIGNATURE not in prompts
    assert "[server tool call web_search (srvtoolu_ws1)" in prompts
    assert "Lisbon climate <https://weather.example/lisbon>" in prompts
    assert "[hologram block]" in prompts
    assert_invariants({sid: written})


def test_on_sqlite_a_compaction_keeps_its_key_order(
        fake_api: FakeAnthropic, sqlite_url: str,  # noqa: F811
        settings_env: Callable[..., None]) -> None:
    settings_env(RECAP_ARCHIVE_SUMMARIZED="true")
    sid = "server-blocks-sqlite"
    written, sent = run_conversation(sid)
    block = compaction()
    reordered = dict(reversed(list(block.items())))  # an app's own key order
    add_message(sid, "assistant", [reordered])
    kept = active(sid)[-1]
    assert json.dumps(kept) == json.dumps([reordered])
    assert fold_all(sid) >= 1
    rows = archived(sid)
    assert all(json.dumps(blocks) == json.dumps(as_stored(sent[i]))
               for i, blocks in rows if blocks is not None)
    assert json.dumps(active(sid)[-1]) == json.dumps([reordered])


def test_clearing_old_tool_output_leaves_server_tool_results_as_they_came(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    from recap.core.retention.stubs import is_stub
    from tests.jobs.test_clear_tool_results import QUIET, TASKS, agent_session, valid

    settings_env(**QUIET)
    sid = "server-blocks-clear"
    replies = [web_search_reply(), tools_reply(), mcp_reply()]
    for reply in replies:
        add_message(sid, "user", "And next?")
        add_message(sid, "assistant", reply)
    agent_session(sid)
    assert summarize(sid, job=Job(task_id="t-clear"), res=get_resources()).status == "skipped"
    blocks = [b for b in active(sid) if b]
    assert blocks[:3] == [as_stored(r) for r in replies]  # untouched
    results = [b[0]["content"] for b in blocks[3:] if b[0]["type"] == "tool_result"]
    assert sum(is_stub(text) for text in results) == TASKS - 1  # the app's tools' output
    valid(sid)
