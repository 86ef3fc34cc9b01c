"""Memories are reference-counted by source: a fact two sessions of a user stated
is one memory with two sources, and forget, rewind and forget_memories of one
session never remove what the other still states. Real worker, PostgreSQL and
the real SDK against the local Messages API server."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recap.api.ingest import add_message
from recap.errors import InvalidInput
from recap.sessions.forget import forget, forget_memories
from recap.sessions.overrides import memories
from recap.sessions.rewind import rewind
from recap.testing import FakeAnthropic
from tests.helpers import message_ids, run_and_wait, runs, sentence, statuses

USER = "ana"
FACT = "The user is allergic to peanuts."
WHOLE = {"RECAP_POLICY": "threshold",
         "RECAP_TRIGGER_MESSAGES": 10, "RECAP_TRIGGER_TOKENS": 100, "RECAP_BATCH_SIZE": 200,
         "RECAP_KEEP_RECENT": 2, "RECAP_EXTRACT_MEMORIES": "true",
         "RECAP_ARCHIVE_SUMMARIZED": "true"}


def say(sid: str) -> None:
    add_message(sid, "user", f"Note this.\nFACT: {FACT}", user_id=USER)
    for i in range(11):
        add_message(sid, "assistant" if i % 2 == 0 else "user", sentence(i, 30))
    run_and_wait(sid)
    assert statuses(sid) == ["applied"], runs(sid)[0].error


def facts(sid: str) -> list[str]:
    return [m["fact"] for m in memories(sid)]


@pytest.fixture
def shared(celery_worker_thread: object, fake_api: FakeAnthropic,
           settings_env: Callable[..., None]) -> None:
    settings_env(**WHOLE)
    say("a")
    say("b")
    [memory] = memories("b")
    assert memory["fact"] == FACT and memory["session_id"] == "a"
    assert [(s["session_id"], s["kind"]) for s in memory["sources"]] == [("a", "user"),
                                                                          ("b", "user")]


@pytest.mark.usefixtures("shared")
def test_forgetting_one_session_keeps_what_another_stated() -> None:
    counts = forget(session_id="a")
    assert counts["memories"] == 0
    [memory] = memories("b")
    assert memory["session_id"] == "b"  # now named by its remaining source
    assert [s["session_id"] for s in memory["sources"]] == ["b"]
    assert forget(session_id="b")["memories"] == 1


@pytest.mark.usefixtures("shared")
def test_rewinding_one_session_keeps_what_another_stated() -> None:
    done = rewind("a", 0)
    assert done.memories_deleted == 0 and message_ids("a") == []
    assert facts("b") == [FACT]
    assert [s["session_id"] for s in memories("b")[0]["sources"]] == ["b"]
    assert rewind("b", 0).memories_deleted == 1
    assert facts("b") == []


@pytest.mark.usefixtures("shared")
def test_forget_memories_by_source_counts_every_source() -> None:
    assert forget_memories(session_id="a", source="user") == 0
    assert facts("b") == [FACT]
    assert forget_memories(user_id=USER, source="user") == 1
    assert facts("b") == []
    with pytest.raises(InvalidInput, match="unknown memory source 'model'"):
        forget_memories(user_id=USER, source="model")


@pytest.mark.usefixtures("shared")
def test_recap_forget_source_drops_memories_only(capsys: pytest.CaptureFixture[str]) -> None:
    from recap.cli import main

    assert main(["forget", "--session", "a", "--source", "user"]) == 0
    assert capsys.readouterr().out.strip() == "dropped 0 memories stated as user"
    assert main(["forget", "--user", USER, "--source", "user", "--json"]) == 0
    assert '"memories": 1' in capsys.readouterr().out
    assert facts("b") == [] and message_ids("b") != []  # the messages stay
