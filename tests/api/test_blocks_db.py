"""Content arrays through the database: stored exactly (JSONB), counted, replayed
by build_context (sync and asyncio), refused whole when anything is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from recap.api.context import as_request, render_json
from recap.db import transaction
from recap.errors import InvalidInput
from recap.llm.tokens import count_tokens
from recap.models import ChatMessage
from recap.testing import validate_messages_request
from tests.api.common import Api
from tests.helpers import session_row
from tests.sdk_request import sdk_problem
from tests.transcripts import call, image, result, scripted


def stored(sid: str) -> list[ChatMessage]:
    with transaction() as s:
        return list(s.scalars(select(ChatMessage).where(ChatMessage.session_id == sid)
                              .order_by(ChatMessage.id)))


def test_a_transcript_is_stored_exactly_and_replayed_as_blocks(api: Api) -> None:
    sid = f"blocks-{api.name}"
    for role, content in scripted():
        api.add_message(sid, role, content)
    rows = stored(sid)
    assert [r.blocks for r in rows] == [c if isinstance(c, list) else None
                                        for _, c in scripted()]
    assert rows[1].tool_links == "call:toolu_01 call:toolu_02"
    assert rows[2].tool_links == "result:toolu_01 result:toolu_02"
    assert "[tool call get_weather (toolu_01): {\"city\": \"Lisbon\"}]" in rows[1].content
    assert "[image: image/png, 800x600" in rows[0].content
    # Counters are exact: the session's tokens are the rows' stored counts.
    row = session_row(sid)
    assert row is not None and row.active_tokens == sum(r.token_count for r in rows)
    assert rows[0].token_count == count_tokens(
        "What's in this photo, and the weather there?") + 640  # 800x600/750
    ctx = api.build_context(sid, system_prompt="You are an agent.")
    body = {"model": "m", "max_tokens": 10, **as_request(ctx, user_message="And tomorrow?")}
    assert validate_messages_request(body) is None and sdk_problem(body) is None
    assert body["messages"][0]["content"][1] == image(800, 600)
    assert ctx["tokens"] >= sum(r.token_count for r in rows)


def test_a_bad_array_writes_nothing_and_names_the_block() -> None:
    from recap.api.ingest import add_message

    add_message("bad-blocks", "user", "hello")
    with pytest.raises(InvalidInput, match=r"content\[1\] \(tool_use\): name: Field required"):
        add_message("bad-blocks", "assistant", [{"type": "text", "text": "ok"},
                                                {"type": "tool_use", "id": "t", "input": {}}])
    with pytest.raises(InvalidInput, match="NUL"):
        add_message("bad-blocks", "user", [result("t", "a\x00b")])
    assert len(stored("bad-blocks")) == 1
    row = session_row("bad-blocks")
    assert row is not None and row.message_count == 1


def test_json_escapes_survive_jsonb_exactly() -> None:
    from recap.api.ingest import add_message

    tricky: dict[str, Any] = {"path": "C:\\temp\\x", "quote": "\"\u00e9\u2028",
                              "emoji": "\U0001f600", "nested": {"list": [1, 2.5, None, True]}}
    add_message("escapes", "assistant", [call("toolu_e", **tricky)])
    add_message("escapes", "tool", [result("toolu_e", "done")])
    assert stored("escapes")[0].blocks == [call("toolu_e", **tricky)]
    ctx = json.loads(render_json("escapes"))
    assert ctx["messages"][1]["content"] == [call("toolu_e", **tricky)]


def test_recap_ingest_takes_content_arrays(tmp_path: Path) -> None:
    from recap.cli import main

    lines = [{"session_id": "cli-blocks", "role": role, "content": content}
             for role, content in scripted()[:3]]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    assert main(["ingest", "--strict", str(path)]) == 0
    assert [r.blocks for r in stored("cli-blocks")] == [c for _, c in scripted()[:3]]
