"""``recap.session``: the session as a whole after a real fold (summary, version,
last fold, counts, memories by who stated them, title, settings), the same from
the asyncio API and over HTTP (tests/http/test_conversation.py), and the errors
every call raises."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

import recap
from recap import aio
from recap.api.ingest import add_message
from recap.errors import InvalidInput, SessionNotFound
from recap.testing import FakeAnthropic
from tests.helpers import run_and_wait, runs, sentence, session_row, wait_for

WHOLE = {"RECAP_POLICY": "threshold", "RECAP_TRIGGER_MESSAGES": 10,
         "RECAP_TRIGGER_TOKENS": 100, "RECAP_BATCH_SIZE": 5, "RECAP_KEEP_RECENT": 2,
         "RECAP_EXTRACT_MEMORIES": "true", "RECAP_ARCHIVE_SUMMARIZED": "true"}
FACT = "The user is allergic to peanuts."


def test_an_unknown_or_bad_id_raises_what_every_call_raises() -> None:
    with pytest.raises(SessionNotFound, match="no chat session with id 'nobody'"):
        recap.session("nobody")
    with pytest.raises(InvalidInput, match="session_id"):
        recap.session("")
    with pytest.raises(SessionNotFound):
        asyncio.run(aio.session("nobody"))


def test_a_new_session_has_no_summary_no_fold_no_memories() -> None:
    add_message("fresh", "user", "Hello there")
    view = recap.session("fresh")
    assert (view.summary, view.summary_version, view.last_fold) == (None, 0, None)
    assert (view.message_count, view.summarized_message_count,
            view.archived_message_count) == (1, 0, 0)
    assert view.memories == {} and view.overrides is None and view.job is None
    assert view.state == "below-high-water"  # the default adaptive policy's
    lines = str(view).splitlines()
    assert lines[0] == "session 'fresh' (untitled)"
    assert lines[1].startswith("  window: 1 messages, ") and lines[1].endswith(
        "0 condensed, 0 archived")
    assert lines[2:4] == ["  summary: none yet", "  last fold: none"]


def test_after_a_fold_the_view_says_what_the_session_holds(
        celery_worker_thread: object, fake_api: FakeAnthropic,
        settings_env: Callable[..., None]) -> None:
    settings_env(**WHOLE)
    sid = "viewed"
    add_message(sid, "user", f"Note this.\nFACT: {FACT}", user_id="u-view")
    for i in range(11):
        add_message(sid, "assistant" if i % 2 == 0 else "user", sentence(i, 30))
    recap.configure_session(sid, {"keep_recent": 2})
    started = datetime.now(UTC)
    run_and_wait(sid)
    [run] = runs(sid)
    assert run.status == "applied", run.error
    wait_for(lambda: recap.session(sid).job is None, what="the job's marker to clear")

    view = recap.session(sid)
    row = session_row(sid)
    assert row is not None and row.rolling_summary
    assert (view.session_id, view.user_id, view.title) == (sid, "u-view", row.title)
    assert (view.summary, view.summary_version, view.summary_tokens) == (
        row.rolling_summary, 1, row.summary_tokens)
    fold = view.last_fold
    assert fold is not None and (fold.outcome, fold.messages, fold.mode) == (
        "applied", run.messages_condensed, "normal")
    assert fold.reason == run.reason and started - timedelta(minutes=1) <= fold.at
    assert (view.message_count, view.summarized_message_count, view.active_tokens) == (
        row.message_count, run.messages_condensed, row.active_tokens)
    assert view.archived_message_count == run.messages_condensed  # archive on
    assert view.memories == {"user": [FACT]}
    assert view.overrides == {"keep_recent": 2}
    assert view.budget > 0 and view.state

    # Printed, it is a short summary a person reads; the fields stay in model_dump().
    printed = str(view)
    lines = printed.splitlines()
    title = repr(view.title) if view.title else "(untitled)"
    assert lines[0] == f"session {sid!r} {title}, user 'u-view'"
    assert 6 <= len(lines) <= 10 and max(map(len, lines)) < 200
    assert f"  summary: version 1, {view.summary_tokens} tokens: " in printed
    assert "  memories: user 1" in printed and "  overrides: {'keep_recent': 2}" in printed
    assert len(printed) < 1000 and repr(view) == f"<SessionView {printed}>"
    assert view.model_dump()["summary"] == view.summary

    # The asyncio API returns the same view; it is frozen.
    assert asyncio.run(aio.session(sid)) == view
    with pytest.raises(ValueError, match="frozen"):
        view.summary = "changed"  # type: ignore[misc]
