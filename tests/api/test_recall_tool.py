"""An agent's recall (``recap.recall``) through the public API: a cleared or folded
tool output comes back whole by its tool_use id or message id, a long one as the
passage a query ranks, and a query finds passages; never another session's text,
and bad input gets an error that names it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import select

import recap
from recap.db import transaction
from recap.errors import ArchivedMessageNotFound, InvalidInput, SessionNotFound
from recap.models import ArchivedMessage
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
