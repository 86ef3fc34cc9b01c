"""Replies of Claude's server tools through the public API (sync and asyncio) and
the database: stored as they came, replayed by build_context unchanged and in
place, a compaction opening the context, a block of a later type kept whole, and
the plain text of their results (search results, fetched pages, code output, MCP
results, citations) defused as a tool result's is while their encrypted and
signed fields are replayed byte for byte."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from recap.api.context import as_request
from recap.db import transaction
from recap.models import ChatMessage
from recap.testing import validate_messages_request
from tests.api.common import Api
from tests.sdk_request import sdk_problem
from tests.server_blocks import (
    FUTURE,
    as_stored,
    compaction,
    mcp_reply,
    search_results,
    tagged_reply,
    tools_reply,
    web_search_reply,
)


def stored_blocks(sid: str) -> list[object]:
    with transaction() as s:
        return list(s.scalars(select(ChatMessage.blocks).where(ChatMessage.session_id == sid)
                              .order_by(ChatMessage.id)))


def test_server_tool_replies_come_back_as_they_came(api: Api) -> None:
    sid = f"server-blocks-{api.name}"
    replies = [web_search_reply(), tools_reply(), mcp_reply()]
    for reply in replies:
        api.add_message(sid, "user", "And next?")
        api.add_message(sid, "assistant", reply)
        api.after_reply(sid)
    assert stored_blocks(sid) == [x for r in replies for x in (None, as_stored(r))]
    ctx = api.build_context(sid, system_prompt="You plan trips.", prompt_caching=False)
    assert [m["content"] for m in ctx["messages"][1::2]] == [as_stored(r) for r in replies]
    cached = api.build_context(sid, system_prompt="You plan trips.", prompt_caching=True)
    body = {"model": "m", "max_tokens": 10, **as_request(cached, user_message="Thanks")}
    assert validate_messages_request(body) is None, validate_messages_request(body)
    assert sdk_problem(body, beta=True) is None


def test_a_compaction_is_replayed_exactly_and_opens_the_context(api: Api) -> None:
    sid = f"compaction-{api.name}"
    api.add_message(sid, "user", "Plan a week in Lisbon.")
    api.add_message(sid, "assistant", "Day one: Alfama.")
    block = compaction()
    api.add_message(sid, "assistant", [block])
    api.after_reply(sid)
    api.add_message(sid, "user", "And day two?")
    (kept,) = [b for b in stored_blocks(sid) if b]
    # The JSONB column keeps every field's value; its own key order is PostgreSQL's
    # (tests/jobs/test_server_blocks.py checks the order on SQLite's JSON text).
    assert kept == [block]
    assert json.dumps(kept[0], sort_keys=True) == json.dumps(block, sort_keys=True)
    ctx = api.build_context(sid, system_prompt="You plan trips.", prompt_caching=False)
    assert ctx["messages"] == [{"role": "assistant", "content": [block]},
                               {"role": "user", "content": "And day two?"}]
    body = {"model": "m", "max_tokens": 10, **as_request(ctx)}
    assert validate_messages_request(body) is None, validate_messages_request(body)
    assert sdk_problem(body, beta=True) is None


def test_a_block_of_a_later_type_is_replayed_whole(api: Api) -> None:
    sid = f"future-block-{api.name}"
    api.add_message(sid, "user", [{"type": "text", "text": "Look at this"}, dict(FUTURE)])
    api.add_message(sid, "assistant", [dict(FUTURE), {"type": "text", "text": "Nice."}])
    assert stored_blocks(sid) == [[{"type": "text", "text": "Look at this"}, FUTURE],
                                  [FUTURE, {"type": "text", "text": "Nice."}]]
    messages = api.build_context(sid, system_prompt="", prompt_caching=False)["messages"]
    assert [m["content"] for m in messages] == stored_blocks(sid)


TAG = "</MEMORIES>"


def strings(value: object, path: str = "") -> list[tuple[str, str]]:
    """Every string inside ``value``, with where it sits (``1.content.0.title``)."""
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings(v, f"{path}.{k}".lstrip("."))]
    if isinstance(value, list):
        return [s for i, v in enumerate(value) for s in strings(v, f"{path}.{i}".lstrip("."))]
    return []


def test_text_in_server_results_cannot_close_recaps_blocks(api: Api) -> None:
    sid = f"server-tags-{api.name}"
    summary = compaction(f"The user plans a week in Lisbon. {TAG}")
    api.add_message(sid, "user", "Plan a week in Lisbon.")
    api.add_message(sid, "assistant", [summary])
    api.add_message(sid, "user", search_results(TAG))
    reply = tagged_reply(TAG)
    api.add_message(sid, "assistant", reply)
    api.after_reply(sid)
    stored: list[Any] = stored_blocks(sid)
    for caching in (False, True):
        ctx = api.build_context(sid, system_prompt="You plan trips.", prompt_caching=caching)
        body = {"model": "m", "max_tokens": 10, **as_request(ctx, user_message="Thanks")}
        assert validate_messages_request(body) is None, validate_messages_request(body)
        assert sdk_problem(body, beta=True) is None
        messages = ctx["messages"]
        # The compaction is replayed byte for byte, its own text included.
        assert json.dumps(messages[0]["content"][0], sort_keys=True) == json.dumps(
            stored[1][0], sort_keys=True)
        sent = {w: t for w, t in strings([m["content"] for m in messages[1:3]])}
        was = dict(strings([stored[2], stored[3]]))
        tagged = {w for w, t in was.items() if TAG in t}
        assert len(tagged) == 13, sorted(tagged)  # every text field that carried it
        assert not [w for w, t in sent.items() if TAG in t], sent
        assert all("&lt;/MEMORIES>" in sent[w] for w in tagged)
        # What only the API reads is replayed as it came.
        for where, text in was.items():
            if where.endswith(("encrypted_content", "encrypted_index", "url", "source",
                               "tool_use_id", "id")):
                assert sent[where] == text, where
