"""An agent's recall (``recap.recall``) through the public API: a cleared or folded
tool output comes back whole by its tool_use id or message id, a long one as the
passage a query ranks, and a query finds passages; never another session's text,
and bad input gets an error that names it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import cast

import pytest
from sqlalchemy import select

import recap
from recap.db import transaction
from recap.errors import ArchivedMessageNotFound, InvalidInput, SessionNotFound
from recap.models import ArchivedMessage
from recap.testing import FakeAnthropic, tool_call
from tests.api.common import SyncApi
from tests.api.test_recall_db import QUIET, READ, TABLE, folded_output

pytestmark = pytest.mark.usefixtures("celery_worker_thread")


def folded(sid: str, output: str = READ) -> int:
    """The archived id of the tool result ``output`` after its session was folded."""
    folded_output(SyncApi(), sid, output, tool="read_file",
                  args={"path": "tests/fixtures/ledger.py"})
    with transaction() as s:
        found = s.scalar(select(ArchivedMessage.id).where(
            ArchivedMessage.session_id == sid, ArchivedMessage.tool_links.like("%result:%")))
    assert found is not None
    return int(found)


def test_a_cleared_output_comes_back_whole_by_its_tool_use_id_or_message_id(
        settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET)
    msg_id = folded("tool-whole")
    [by_tool] = recap.recall("tool-whole", tool_use_id="toolu_7", max_tokens=20_000)
    [by_id] = recap.recall("tool-whole", message_id=msg_id, max_tokens=20_000)
    assert by_tool == by_id
    assert by_tool["whole"] and by_tool["channel"] == "tool result"
    assert by_tool["message_id"] == msg_id and by_tool["created_at"] is not None
    assert by_tool["call"] == ('[tool call read_file (toolu_7): '
                               '{"path": "tests/fixtures/ledger.py"}]')
    assert all(line in by_tool["text"] for line in READ.split("\n"))


def test_a_long_output_comes_back_as_the_passage_its_query_ranks(
        settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET)
    folded("tool-passage")
    [got] = recap.recall("tool-passage", tool_use_id="toolu_7", max_tokens=120,
                         query="which fixture hash was pinned with E-4471?")
    assert not got["whole"] and "FIXTURE_SHA = '9f2c1e7ab41d'" in got["text"]
    assert "…" in got["text"] and recap.recall("tool-passage", tool_use_id="toolu_7",
                                               max_tokens=60)[0]["text"].startswith(
        "[tool result for toolu_7: # ledger fixtures")


def test_a_query_finds_the_passages_of_the_session_only(
        settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET)
    folded("tool-query", TABLE)
    folded("tool-other")  # another session: its text is never an answer here
    found = recap.recall("tool-query", query="refunds for APAC on Nov 14")
    assert found and "| 2026-11-14 | APAC | refunds | 1,200 |" in found[0]["text"]
    assert all("E-4471" not in r["text"] for r in found)
    assert recap.recall("tool-query", query="E-4471 FIXTURE_SHA") == []
    assert recap.recall("tool-query", query="nothing-like-this-anywhere 12345") == []


def test_another_sessions_message_or_tenant_is_unknown(
        settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET)
    other = folded("tool-theirs")
    folded("tool-mine", TABLE)
    with pytest.raises(ArchivedMessageNotFound, match="holds no message"):
        recap.recall("tool-mine", message_id=other)
    with pytest.raises(ArchivedMessageNotFound, match="toolu_8"):
        recap.recall("tool-mine", tool_use_id="toolu_8")
    with pytest.raises(ArchivedMessageNotFound):
        recap.recall("tool-mine", tool_use_id="toolu__")  # "_" is a character, not a wildcard
    with pytest.raises(SessionNotFound):
        recap.recall("never-stored", query="APAC")
    with recap.tenant("acme"), pytest.raises(SessionNotFound):
        recap.recall("tool-mine", query="APAC")


@pytest.mark.parametrize(("kwargs", "named"), [
    ({}, "message_id, tool_use_id or query"),
    ({"message_id": 1, "tool_use_id": "toolu_7"}, "not both"),
    ({"message_id": 0}, "message_id"),
    ({"message_id": 2**63}, "message_id"),
    ({"message_id": True}, "message_id"),
    ({"tool_use_id": "a b"}, "tool_use_id"),
    ({"query": ""}, "query is empty"),
    ({"query": "   "}, "query is empty"),
    ({"query": "x" * 1_000_000}, "at most 2000"),
    ({"query": "APAC\x00"}, "query"),
    ({"query": "a & !b | (c:*)"}, "names nothing"),
    ({"query": "APAC", "max_tokens": 0}, "max_tokens"),
    ({"query": "APAC", "max_tokens": 10**6}, "max_tokens"),
])
def test_bad_input_is_named(settings_env: Callable[..., None], kwargs: dict[str, object],
                            named: str) -> None:
    settings_env(**QUIET)
    recap.add_message("tool-bad", "user", "hi")
    with pytest.raises(InvalidInput, match=named.replace("(", r"\(")):
        recap.recall("tool-bad", **kwargs)  # type: ignore[arg-type]


def test_operators_of_the_search_syntax_are_words_or_nothing(
        settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET)
    folded("tool-ops", TABLE)
    for query in ("APAC & !refunds", "APAC | EMEA:*", "'APAC' <-> refunds", "refunds:* (APAC"):
        found = recap.recall("tool-ops", query=query)
        assert all(r["message_id"] > 0 for r in found), query


# -- recall as a tool: recap.recall_tool_definition, recap.recall_tool, recap.aio ----------

LOG = ("collected 40 items\nERROR LGR-3621 raised at:\n  src/ledger/loader.py:212\n"
       "teardown ok")


def archived(sid: str, msg_id: int, text: str = LOG) -> None:
    """A session with one archived tool result (``toolu_a{msg_id}``), as a clear leaves it."""
    from recap.db import utcnow

    recap.add_message(sid, "user", "Hello")
    with transaction() as s:
        s.add(ArchivedMessage(id=msg_id, session_id=sid, role="tool", token_count=20, run_id=1,
                              created_at=utcnow(), content=text,
                              tool_links=f"result:toolu_a{msg_id}"))


def test_the_definition_is_a_messages_api_tool_whose_input_is_the_call(
        fake_api: FakeAnthropic) -> None:
    import anthropic
    from anthropic.types import ToolParam

    archived("tool-def", 1)
    definition = cast(ToolParam, recap.recall_tool_definition())  # a dict the SDK types
    assert definition["name"] == "recap_recall"
    fake_api.assistant(tool_call("recap_recall", {"tool_use_id": "toolu_a1"}))
    client = anthropic.Anthropic(base_url=fake_api.url, api_key="test")
    reply = client.messages.create(model="claude-test", max_tokens=100, tools=[definition],
                                   messages=[{"role": "user", "content": "Where?"}])
    [use] = [b for b in reply.content if b.type == "tool_use"]
    text = recap.recall_tool("tool-def", use.input)
    assert text.startswith("Recalled from this conversation's archive")
    assert "\n- [tool result · message 1 · " in text and "\n    src/ledger/loader.py:212" in text
    assert recap.recall_tool("tool-def", {"message_id": "1"}) == text  # "1" read as 1
    assert recap.recall_tool("tool-def", {"message_id": 1, "query": ""}) == text  # no query
    assert "ERROR LGR-3621" in recap.recall_tool("tool-def", {"query": "lgr3621"})
    assert recap.recall_tool("tool-def", {"query": "nothing-like-it 98765"}) == (
        "Nothing in this conversation's archive matches that query.")
    with pytest.raises(InvalidInput, match="tool name"):
        recap.recall_tool_definition("no spaces")


@pytest.mark.parametrize(("tool_input", "named"), [
    ({"tool_use_id": "toolu_a2"}, "holds no the result of tool call 'toolu_a2'"),
    ({"message_id": 2}, "holds no message 2"),  # another session's
    ({}, "pass message_id, tool_use_id or query"),
    ("toolu_a1", "must be an object"),
    (None, "must be an object"),
    ({"path": "/etc/passwd"}, "unknown field 'path'"),
    ({"tool_use_id": 7}, "tool_use_id must be"),
    ({"message_id": 1, "tool_use_id": "toolu_a1"}, "not both"),
    ({"query": ""}, "query is empty"),
    ({"query": "x" * 1_000_000}, "at most 2000"),
    ({"query": "a & !b | (c:*)"}, "names nothing"),
    ({"message_id": "<ARCHIVE_RECALL>" * 100}, "message_id must be"),
])
def test_bad_input_is_a_short_error_text_not_an_exception(
        tool_input: object, named: str) -> None:
    archived("tool-mine", 1)
    archived("tool-theirs", 2)
    text = recap.recall_tool("tool-mine", tool_input)
    assert text.startswith("Recall failed: ") and named in text, text
    assert len(text) < 400 and "\n" not in text and "<ARCHIVE_RECALL>" not in text
    assert "LGR-3621" not in text


def test_an_unknown_session_or_another_tenants_is_an_error_text() -> None:
    archived("tool-tenant", 1)
    assert "no chat session" in recap.recall_tool("never-stored", {"query": "LGR-3621"})
    with recap.tenant("acme"):
        assert recap.recall_tool("tool-tenant", {"tool_use_id": "toolu_a1"}).startswith(
            "Recall failed: no chat session")


def test_the_asyncio_twins_answer_as_the_sync_calls() -> None:
    archived("tool-aio", 1)

    async def both() -> tuple[list[recap.api.recall.Recalled], str]:
        try:
            return (await recap.aio.recall("tool-aio", tool_use_id="toolu_a1"),
                    await recap.aio.recall_tool("tool-aio", {"query": "lgr3621"}))
        finally:
            await recap.aio.close()

    got, text = asyncio.run(both())
    assert got == recap.recall("tool-aio", tool_use_id="toolu_a1")
    assert text == recap.recall_tool("tool-aio", {"query": "lgr3621"})
    with pytest.raises(ArchivedMessageNotFound):
        asyncio.run(recap.aio.recall("tool-aio", message_id=99))


def test_the_definition_in_the_docs_is_the_one_the_api_returns() -> None:
    import json

    from tests.docs.blocks import ROOT, blocks

    shown = [json.loads(b.code) for b in blocks(ROOT / "docs" / "MEMORY.md")
             if b.lang == "json" and '"recap_recall"' in b.code]
    assert shown == [recap.recall_tool_definition()]
