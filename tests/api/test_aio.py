"""The asyncio API (recap.api.aio): the sync API's scenarios run against both
implementations, then what only the async one promises: the caller's
AsyncSession, one engine per loop, and an event loop that a call never blocks."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import update

from recap.api import aio, context
from recap.core.context.assemble import content_text, system_text
from recap.db import transaction
from recap.errors import InvalidInput, SessionNotFound
from recap.llm.tokens import count_tokens
from recap.models import ChatSession
from recap.store.enqueue import BREAKER, SUMMARIZE_TASK, TITLE_TASK
from recap.testing import validate_messages_request
from tests.api.common import Api
from tests.api.test_ingest import count_rows
from tests.helpers import LOW, message_ids, runs, seed, session_row

# -- the sync API's scenarios, against both -----------------------------------------

@pytest.mark.parametrize(("call", "args", "kwargs", "problem"), [
    ("add_message", ("s", "robot", "hi"), {}, "unknown role 'robot'"),
    ("add_message", ("s", "user", "  \n"), {}, "whitespace"),
    ("add_message", ("s", "user", "a\x00b"), {}, "NUL"),
    ("add_message", ("s", "user", b"bytes"), {}, "content must be a str"),
    ("add_message", ("s", "user", "hi"), {"pinned": "yes"}, "pinned must be a bool"),
    ("add_message", (42, "user", "hi"), {}, "session_id must be a str, got int"),
    ("build_context", ("",), {"system_prompt": "x"}, "session_id is empty"),
    ("build_context", ("s",), {"system_prompt": None}, "system_prompt must be a str"),
    ("build_context", ("s",), {"system_prompt": "bad \ud800"}, "not valid text"),
    ("after_reply", ("x" * 256,), {}, "at most 255"),
    ("after_reply", (None,), {}, "session_id must be a str"),
])
def test_bad_input_raises_invalid_input_and_writes_nothing(
        api: Api, call: str, args: tuple[Any, ...], kwargs: dict[str, Any],
        problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        getattr(api, call)(*args, **kwargs)
    assert count_rows() == (0, 0)


def test_an_unknown_session_has_no_context_and_queues_nothing(
        api: Api, sent: list[tuple[str, str]]) -> None:
    with pytest.raises(SessionNotFound, match="'nobody'"):
        api.build_context("nobody", system_prompt="")
    assert api.after_reply("nobody") is False
    assert count_rows() == (0, 0) and sent == []


def test_messages_keep_the_counters_exact_and_ids_increasing(api: Api) -> None:
    texts = [f"message number {i} about the Lisbon trip" for i in range(6)]
    ids = [api.add_message("counted", ("user", "assistant")[i % 2], t, pinned=i == 0)
           for i, t in enumerate(texts)]
    assert ids == sorted(ids) == message_ids("counted")
    row = session_row("counted")
    assert row is not None and row.message_count == 6
    assert row.active_tokens == sum(count_tokens(t) for t in texts)


def test_the_context_is_the_stored_window_and_a_valid_request(api: Api) -> None:
    for role, text in [("assistant", "Welcome back!"), ("user", "weather in Lisbon?"),
                       ("assistant", "calling weather"), ("tool", "18C sunny"),
                       ("system", "Reply in Portuguese."), ("user", "and tomorrow?")]:
        api.add_message("ctx", role, text)
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "ctx").values(
            rolling_summary="They planned Lisbon.", summary_tokens=5))
    ctx = api.build_context("ctx", system_prompt="You plan trips.")
    # The same answer as the sync API's, read back independently.
    assert ctx == context.build_context("ctx", system_prompt="You plan trips.")
    system = system_text(ctx["system"])
    assert "They planned Lisbon." in system and "Reply in Portuguese." in system
    assert content_text(ctx["messages"][-1]["content"]).endswith("18C sunny\n\nand tomorrow?")
    body = {"model": "claude-test", "max_tokens": 64, **aio.as_request(ctx)}
    assert validate_messages_request(body) is None


def test_the_hook_queues_one_job_once_the_thresholds_are_crossed(
        api: Api, settings_env: Callable[..., None], sent: list[tuple[str, str]]) -> None:
    settings_env(**LOW)
    for i in range(10):
        api.add_message("cross", ("user", "assistant")[i % 2], "word " * 30)
        assert api.after_reply("cross") is False
    api.add_message("cross", "user", "word " * 30)
    assert api.after_reply("cross") is True
    row = session_row("cross")
    # The pending marker, unless the in-process worker (started by an earlier test)
    # already claimed the job, which clears it.
    assert row is not None and (row.enqueued_at is not None or row.lease_token is not None
                                or runs("cross"))
    assert api.after_reply("cross") is False  # coalesced: a job is already pending
    assert sent == [(SUMMARIZE_TASK, "cross")]


def test_the_first_exchange_queues_one_title_job(
        api: Api, settings_env: Callable[..., None], sent: list[tuple[str, str]]) -> None:
    settings_env(RECAP_TITLES_ENABLED="true")
    api.add_message("titled", "user", "Can you help me plan a week in Lisbon?")
    assert api.after_reply("titled") is False
    assert sent == []
    api.add_message("titled", "assistant", "Gladly. When are you going?")
    assert api.after_reply("titled") is False  # no summary job...
    assert api.after_reply("titled") is False
    assert sent == [(TITLE_TASK, "titled")]  # ...and one title job, coalesced


def test_the_hook_never_raises_when_the_database_is_unreachable(
        api: Api, settings_env: Callable[..., None], caplog: pytest.LogCaptureFixture) -> None:
    seed("db-down", 3)
    settings_env(DATABASE_URL="postgresql+psycopg://postgres@127.0.0.1:1/nowhere")
    with caplog.at_level(logging.WARNING, logger="recap.ingest"):
        assert api.after_reply("db-down") is False
    assert "db-down" in caplog.text and "DatabaseNotReady" in caplog.text
    assert "is unreachable" in caplog.text and "recap db upgrade" in caplog.text
    with pytest.raises(InvalidInput):  # a bad id is still the caller's bug
        api.after_reply("")


@pytest.mark.usefixtures("broker_down")
def test_with_the_broker_down_the_hook_logs_clears_the_marker_and_pauses(
        api: Api, settings_env: Callable[..., None], caplog: pytest.LogCaptureFixture) -> None:
    settings_env(**LOW, CELERY_BROKER_URL="redis://127.0.0.1:1/0")
    seed("outage", 11)
    with caplog.at_level(logging.WARNING, logger="recap.enqueue"):
        assert api.after_reply("outage") is False
    assert "outage" in caplog.text and "sweeper" in caplog.text
    row = session_row("outage")
    assert row is not None and row.enqueued_at is None  # the sweeper will queue it
    assert BREAKER.is_open()
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="recap.enqueue"):
        assert api.after_reply("outage") is False  # paused: does not even try
    assert "could not enqueue" not in caplog.text
