"""Title jobs: title_session against the local API server, and the hook and sweeper
paths through a real worker (the title text itself: tests/core/prompts/test_titles.py)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from recap.api.ingest import add_message, after_reply
from recap.core.prompts.titles import TITLE_MAX_TOKENS
from recap.db import session_factory, transaction, utcnow
from recap.errors import PermanentLLMError, TransientLLMError, UnusableSummary
from recap.llm.offline import OfflineSummarizer
from recap.models import ChatSession
from recap.settings import get_settings
from recap.store.enqueue import TITLE_TASK, due_for_title, mark_title_requested, send_title
from recap.testing import FakeAnthropic, error, ok
from recap.worker.celery_app import app
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.titles import sweep_titles, title_session
from tests.env import API_KEY
from tests.helpers import session_of, session_row, wait_for


def exchange(sid: str, user: str = "Our nginx returns 502s after the deploy. Why?",
             reply: str = "Probably the upstream timeout; check proxy_read_timeout.") -> None:
    add_message(sid, "user", user)
    add_message(sid, "assistant", reply)


def title_of(sid: str) -> str | None:
    row = session_row(sid)
    assert row is not None
    return row.title


def test_title_is_generated_cleaned_and_stored(fake_api: FakeAnthropic) -> None:
    exchange("s1")
    fake_api.script(ok('"Debugging the Nginx 502s."'))
    assert title_session("s1", res=get_resources()) == "Debugging the Nginx 502s"
    assert title_of("s1") == "Debugging the Nginx 502s"
    (request,) = fake_api.requests
    assert request["max_tokens"] == TITLE_MAX_TOKENS
    assert "temperature" not in request
    assert "data to describe" in request["system"]
    prompt = fake_api.prompts()[0]
    assert "Our nginx returns 502s" in prompt and "proxy_read_timeout" in prompt


def test_a_long_answer_is_stored_at_the_documented_length(fake_api: FakeAnthropic) -> None:
    exchange("s1")
    fake_api.script(ok("Debugging the Nginx 502 errors that started right after "
                       "the Friday deploy of the new upstream"))  # 14 words
    assert title_session("s1", res=get_resources()) == "Debugging the Nginx 502 errors that started"
    assert title_of("s1") == "Debugging the Nginx 502 errors that started"


def test_the_stand_in_s_own_title_keeps_the_documented_length(fake_api: FakeAnthropic) -> None:
    exchange("s1")
    title = title_session("s1", res=get_resources())
    assert title is not None and 1 <= len(title.split()) <= 7


def test_the_reply_to_the_user_is_used_not_a_greeting(fake_api: FakeAnthropic) -> None:
    add_message("s1", "assistant", "Hi! How can I help you today?")
    add_message("s1", "user", "Book a hotel in Lisbon for March 14th.")
    assert title_session("s1", res=get_resources()) is None  # no reply yet
    assert fake_api.requests == []
    add_message("s1", "assistant", "Booked the Lisbon hotel for March 14th.")
    fake_api.script(ok("Lisbon hotel booking"))
    assert title_session("s1", res=get_resources()) == "Lisbon hotel booking"
    prompt = fake_api.prompts()[0]
    assert "Booked the Lisbon hotel" in prompt and "How can I help" not in prompt


def test_no_call_before_the_first_exchange(fake_api: FakeAnthropic) -> None:
    add_message("s1", "user", "Hello?")
    assert title_session("s1", res=get_resources()) is None
    assert title_session("no-such-session", res=get_resources()) is None
    assert fake_api.requests == []
    assert title_of("s1") is None


def test_an_existing_title_is_returned_without_a_call(fake_api: FakeAnthropic) -> None:
    exchange("s1")
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "s1").values(title="Mine"))
    assert title_session("s1", res=get_resources()) == "Mine"
    assert fake_api.requests == []


def test_a_title_set_during_the_call_is_never_overwritten(fake_api: FakeAnthropic) -> None:
    exchange("s1")
    fake_api.script(ok("Model title"))
    gate = fake_api.hold()
    result: list[str | None] = []
    worker = threading.Thread(target=lambda: result.append(
        title_session("s1", res=get_resources())))
    worker.start()
    gate.wait_entered()  # the title call is in flight: the app names the session now
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "s1")
                  .values(title="Named by the app"))
    gate.release()
    worker.join(30)
    assert not worker.is_alive()
    assert result == ["Named by the app"]
    assert title_of("s1") == "Named by the app"
    assert len(fake_api.requests) == 1


def test_a_failed_call_leaves_the_title_null_and_raises(
        fake_api: FakeAnthropic, caplog: pytest.LogCaptureFixture) -> None:
    exchange("s1")
    fake_api.script(error(500))
    with caplog.at_level(logging.INFO, logger="recap.titles"), \
            pytest.raises(TransientLLMError):
        title_session("s1", res=get_resources())
    assert title_of("s1") is None
    (line,) = [r.getMessage() for r in caplog.records if r.name == "recap.titles"]
    assert '"session_id": "s1"' in line and '"error_class": "TransientLLMError"' in line
    assert API_KEY not in caplog.text


def test_permanent_and_unusable_answers(fake_api: FakeAnthropic) -> None:
    exchange("s1")
    cut = ok("A title that runs on", stop_reason="max_tokens")
    fake_api.script(error(401), ok('"?!"'), cut, cut)
    with pytest.raises(PermanentLLMError):
        title_session("s1", res=get_resources())
    with pytest.raises(UnusableSummary, match="no usable title"):
        title_session("s1", res=get_resources())
    with pytest.raises(PermanentLLMError, match="cut off"):  # retried once, then kept none
        title_session("s1", res=get_resources())
    assert title_of("s1") is None


def test_offline_titles_come_from_the_first_words(fake_api: FakeAnthropic) -> None:
    exchange("s1", user="Please help me plan the Lisbon offsite in March, budget $2,400.")
    exchange("s2", user="???", reply="Could you say more?")
    offline = get_resources().with_summarizer(OfflineSummarizer())
    assert title_session("s1", res=offline) == "Please help me plan the Lisbon"
    assert title_session("s2", res=offline) == "Could you say more"
    assert fake_api.requests == []


def test_due_for_title_and_coalescing() -> None:
    now = utcnow()
    stale = now - timedelta(minutes=15)
    exchange("due")
    exchange("titled")
    exchange("pending")
    exchange("lost")
    add_message("early", "user", "Hi")
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "titled").values(title="T"))
        s.execute(update(ChatSession).where(ChatSession.id == "pending")
                  .values(title_requested_at=now - timedelta(minutes=1)))
        s.execute(update(ChatSession).where(ChatSession.id == "lost")
                  .values(title_requested_at=now - timedelta(hours=1)))
        due = set(s.scalars(select(ChatSession.id).where(due_for_title(stale))))
    assert due == {"due", "lost"}
    with transaction() as s:
        assert mark_title_requested("due", db=s, now=now, stale_before=stale)
        # A second request while the first is pending is coalesced.
        assert not mark_title_requested("due", db=s, now=now, stale_before=stale)
        assert not mark_title_requested("pending", db=s, now=now, stale_before=stale)
        assert not mark_title_requested("titled", db=s, now=now, stale_before=stale)
        assert not mark_title_requested("early", db=s, now=now, stale_before=stale)
        assert mark_title_requested("lost", db=s, now=now, stale_before=stale)


@pytest.fixture
def titles_on(settings_env: Callable[..., None]) -> None:
    settings_env(RECAP_TITLES_ENABLED="true")


class Sent:
    """Records every job published by name (and still publishes it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tasks: list[tuple[str, tuple[Any, ...]]] = []
        real = app.send_task

        def send_task(name: str, args: tuple[Any, ...] = (), **kw: Any) -> Any:
            self.tasks.append((name, tuple(args)))
            return real(name, args, **kw)

        monkeypatch.setattr(app, "send_task", send_task)

    def titles(self) -> list[str]:
        return [args[0] for name, args in self.tasks if name == TITLE_TASK]


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sent]:
    yield Sent(monkeypatch)


@pytest.mark.usefixtures("celery_worker_thread", "titles_on")
def test_the_hook_titles_the_session_after_the_first_exchange(
        fake_api: FakeAnthropic, sent: Sent) -> None:
    add_message("s1", "user", "Our nginx returns 502s after the deploy. Why?")
    assert after_reply("s1") is False  # no exchange yet: no title job, no summary
    assert sent.titles() == [] and title_of("s1") is None
    add_message("s1", "assistant", "Probably the upstream timeout; check proxy_read_timeout.")
    fake_api.script(ok('"Nginx 502s after a deploy."'))
    assert after_reply("s1") is False  # far below the summary thresholds
    assert sent.titles() == ["s1"]
    wait_for(lambda: title_of("s1"), what="the title from the hook's job")
    assert title_of("s1") == "Nginx 502s after a deploy"
    assert "proxy_read_timeout" in fake_api.prompts()[0]
    # Titled: the hook never asks again.
    add_message("s1", "user", "Thanks!")
    after_reply("s1")
    assert sent.titles() == ["s1"] and len(fake_api.requests) == 1


@pytest.mark.usefixtures("celery_worker_thread", "titles_on")
def test_the_hook_in_the_callers_transaction_sends_after_commit(
        fake_api: FakeAnthropic, sent: Sent) -> None:
    fake_api.script(ok("Lisbon hotel booking"))
    with session_factory()() as s:
        with s.begin():
            add_message("s1", "user", "Book a hotel in Lisbon for March 14th.", db=s)
            add_message("s1", "assistant", "Booked the Lisbon hotel for March 14th.", db=s)
            assert after_reply("s1", db=s) is False
            assert sent.titles() == []  # not before the caller commits
        assert sent.titles() == ["s1"]
    wait_for(lambda: title_of("s1"), what="the title queued at commit")
    assert title_of("s1") == "Lisbon hotel booking"


@pytest.mark.usefixtures("titles_on")
def test_the_hook_in_a_rolled_back_transaction_sends_nothing(sent: Sent) -> None:
    exchange("s1")
    with session_factory()() as s:
        s.begin()
        assert after_reply("s1", db=s) is False
        s.rollback()
    assert sent.titles() == []
    row = session_row("s1")
    assert row is not None and row.title_requested_at is None  # the marker rolled back too


@pytest.mark.usefixtures("celery_worker_thread")
def test_the_task_stores_a_title_end_to_end(fake_api: FakeAnthropic) -> None:
    exchange("s1")
    fake_api.script(error(529), ok("Nginx 502 troubleshooting."))
    assert send_title("s1")
    wait_for(lambda: title_of("s1"), what="the title")
    assert title_of("s1") == "Nginx 502 troubleshooting"
    assert len(fake_api.requests) == 2  # retried once after the overload


def test_titles_can_be_switched_off(sent: Sent) -> None:
    off = get_settings()
    assert not off.titles_enabled  # RECAP_TITLES_ENABLED=false in the test environment
    exchange("s1")
    assert after_reply("s1") is False
    assert sweep_titles(off, now=utcnow(), limit=10) == 0
    assert sent.tasks == []
    assert session_of("s1").title_requested_at is None


@pytest.mark.usefixtures("celery_worker_thread", "titles_on")
def test_the_sweeper_titles_what_the_hook_missed(fake_api: FakeAnthropic) -> None:
    exchange("lost")
    exchange("pending")
    now = utcnow()
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "lost")
                  .values(title_requested_at=now - timedelta(hours=1)))
        s.execute(update(ChatSession).where(ChatSession.id == "pending")
                  .values(title_requested_at=now))
    fake_api.always(ok("Upstream timeouts"))
    assert sweep_titles(get_settings(), now=now, limit=10) == 1
    wait_for(lambda: title_of("lost"), what="the swept title")
    assert title_of("pending") is None
    assert sweep_titles(get_settings(), now=now, limit=10) == 0  # marked, not yet stale
