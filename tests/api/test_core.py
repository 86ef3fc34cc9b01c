"""The reply core decides without I/O: the hook's plan from a row of counters, the
jobs it sends in order, the statement values of a new message."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from recap.api.core import (
    NewMessage,
    validate_message,
)
from recap.api.hook import (
    JobKind,
    JobToSend,
    ReplyJobs,
    plan_hook,
)
from recap.errors import InvalidInput
from recap.settings import Settings, get_settings
from tests.helpers import LOW

NOW = datetime(2026, 1, 1, tzinfo=UTC)
STALE = NOW - timedelta(seconds=300)


@pytest.fixture
def settings(settings_env: Callable[..., None]) -> Settings:
    settings_env(**LOW)
    return get_settings()


def counters(**changes: object) -> SimpleNamespace:
    row = {"message_count": 12, "active_tokens": 2000, "summary_tokens": 0, "leased": False,
           "blocked": False, "normal_blocked": False, "normal_blocked_under": None,
           "overrides": None, "title": "Trip", "title_fresh": False}
    return SimpleNamespace(**{**row, **changes})


def test_no_session_means_no_job(settings: Settings) -> None:
    hook = plan_hook("s", None, settings=settings, now=NOW, stale=STALE)
    assert (hook.title, hook.summarize) == (None, None)


def test_over_the_triggers_it_marks_the_session_pending(settings: Settings) -> None:
    hook = plan_hook("s", counters(), settings=settings, now=NOW, stale=STALE)
    assert hook.title is None and hook.summarize is not None
    assert "enqueued_at" in str(hook.summarize)


@pytest.mark.parametrize("why", [{"leased": True}, {"blocked": True},
                                 {"message_count": 3, "active_tokens": 50}])
def test_a_running_job_a_cool_down_or_small_counters_queue_nothing(
        settings: Settings, why: dict[str, object]) -> None:
    hook = plan_hook("s", counters(**why), settings=settings, now=NOW, stale=STALE)
    assert hook.summarize is None


def test_an_untitled_session_past_its_first_exchange_asks_for_a_title(
        settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_TITLES_ENABLED="true")
    hook = plan_hook("s", counters(title=None, leased=True), settings=get_settings(),
                     now=NOW, stale=STALE)
    assert hook.title is not None and hook.summarize is None
    hook = plan_hook("s", counters(title=None, title_fresh=True), settings=get_settings(),
                     now=NOW, stale=STALE)
    assert hook.title is None  # one is pending already


def test_jobs_to_send_title_first() -> None:
    assert ReplyJobs(summarize=True, title=True).to_send("s") == [
        JobToSend(JobKind.TITLE, "s"), JobToSend(JobKind.SUMMARIZE, "s")]
    assert ReplyJobs().to_send("s") == []


def test_a_new_message_binds_every_column(settings: Settings) -> None:
    msg = validate_message("s", "user", "hello", pinned=False, user_id="u",
                           max_inline_chars=settings.max_inline_base64_chars)
    params = NewMessage("s", "user", msg, 3, False, "u").params(NOW)
    assert params == {"session_id": "s", "role": "user", "content": "hello", "pinned": False,
                      "tokens": 3, "now": NOW, "user_id": "u", "blocks": None,
                      "tool_links": None}


@pytest.mark.parametrize("args", [("", "user", "x"), ("s", "robot", "x"), ("s", "user", 3)])
def test_bad_input_is_refused_before_any_statement(settings: Settings,
                                                   args: tuple[object, ...]) -> None:
    with pytest.raises(InvalidInput):
        validate_message(*args, pinned=False, user_id=None,
                         max_inline_chars=settings.max_inline_base64_chars)
