"""Archive mode, resummarize, and per-session settings."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import DBAPIError

from recap.api.ingest import after_reply
from recap.cli import main as recap
from recap.core.prompts.summarize import validate_template
from recap.db import transaction, utcnow
from recap.errors import InvalidInput, SessionBusy, Superseded
from recap.llm.templates import shipped_template
from recap.models import ArchivedMessage, ChatSession, SummaryRun
from recap.sessions.overrides import configure_session
from recap.settings import get_settings
from recap.testing import FakeAnthropic, ok
from recap.worker.jobs.archive import resummarize
from recap.worker.jobs.resources import get_resources
from tests.checks import check_invariants
from tests.helpers import (
    LOW,
    REFUSED,
    message_ids,
    refusing_inserts,
    run_and_wait,
    runs,
    seed,
    session_row,
    statuses,
)

pytestmark = pytest.mark.usefixtures("celery_worker_thread")


def run(sid: str, n: int = 1) -> None:
    run_and_wait(sid, n=n)


def archived(sid: str) -> list[ArchivedMessage]:
    with transaction() as s:
        return list(s.scalars(select(ArchivedMessage).where(ArchivedMessage.session_id == sid)
                              .order_by(ArchivedMessage.id)))


def test_archive_mode_moves_exactly_the_condensed_rows(fake_api: FakeAnthropic,
                                                      settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_ARCHIVE_SUMMARIZED="true")
    ids = seed("arch", 12, pinned={1})
    run("arch")
    [run_row] = [r for r in runs("arch") if r.status == "applied"]
    kept = archived("arch")
    assert [m.id for m in kept] == [ids[0], *ids[2:6]]  # the pinned one stays active
    assert all(m.run_id == run_row.id for m in kept)
    assert message_ids("arch") == [ids[1], *ids[6:]]
    with transaction() as s:
        assert check_invariants(s, written={"arch": ids}) == []


def test_resummarize_rebuilds_from_the_archive(
        fake_api: FakeAnthropic, settings_env: Callable[..., None],
        capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(**LOW, RECAP_ARCHIVE_SUMMARIZED="true")
    ids = seed("re", 12)
    run("re")
    ids += seed("re", 5)
    run("re", 2)
    assert len(archived("re")) == 10
    fake_api.script(ok("A better summary of all ten archived messages."))
    assert recap(["resummarize", "re"]) == 0
    assert '"status": "applied"' in capsys.readouterr().out
    row = session_row("re")
    assert row is not None and row.summary_version == 3
    assert row.rolling_summary == "A better summary of all ten archived messages."
    prompt = fake_api.prompts()[-1]
    assert prompt.count('<message role="') == 10 and "(none yet)" in prompt
    with transaction() as s:
        last = s.scalars(select(SummaryRun).order_by(SummaryRun.id.desc())).first()
        assert last is not None and last.messages_condensed == 0
        assert check_invariants(s, written={"re": ids}) == []


def test_resummarize_refuses_an_incomplete_archive(fake_api: FakeAnthropic,
                                                   settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_ARCHIVE_SUMMARIZED="false")
    seed("noarch", 12)
    run("noarch")  # archive mode off: the condensed rows are gone
    with pytest.raises(InvalidInput, match="0 archived of 5 condensed"):
        resummarize("noarch", res=get_resources())


def test_session_override_beats_global_settings(fake_api: FakeAnthropic,
                                               settings_env: Callable[..., None]) -> None:
    settings_env(**LOW)
    seed("tuned", 12)
    seed("plain", 12)
    configure_session("tuned", {"trigger_messages": 50, "model": "claude-sonnet-5-5"})
    assert after_reply("plain") is True
    assert after_reply("tuned") is False  # 12 messages < its own 50
    configure_session("tuned", {"batch_size": 3, "model": "claude-sonnet-5-5"}, replace=True)
    run("tuned")
    # after_reply("plain") queued a job of its own: the one sent here may find its
    # lease held and be skipped first, so wait for the applied run itself.
    run_and_wait("plain", final=("applied",))
    tuned = [r for r in runs("tuned") if r.status == "applied"][0]
    assert tuned.messages_condensed == 3 and tuned.model == "claude-sonnet-5-5"
    assert [r.messages_condensed for r in runs("plain") if r.status == "applied"] == [5]
    models = {r["model"] for r in fake_api.requests}
    assert models == {"claude-sonnet-5-5", get_settings().model}


def test_spanish_template_per_session(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**LOW)
    seed("es", 12)
    configure_session("es", {"prompt": "es"})
    run("es")
    assert "Actualiza el resumen" in fake_api.prompts()[0]
    assert validate_template(shipped_template("es"))


def test_default_prompt_asks_for_the_conversations_language() -> None:
    assert "same language as the conversation" in shipped_template("default")


@pytest.mark.parametrize(("overrides", "problem"), [
    ({"trigger_mesages": 5}, "unknown session setting"),
    ({"batch_size": 0}, "batch_size"),
    ({"prompt": "klingon"}, "prompt"),
    ({"max_summary_tokens": 5000, "context_budget_tokens": 4000}, "max_summary_tokens"),
    ("not a dict", "must be an object"),
])
def test_bad_overrides_are_rejected_and_write_nothing(overrides: Any, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        configure_session("bad-tune", overrides, create=True)
    assert session_row("bad-tune") is None


def test_recap_configure_and_context_budget(capsys: pytest.CaptureFixture[str]) -> None:
    from recap.api.context import build_context

    seed("cfg", 2)
    assert recap(["configure", "cfg", "context_budget_tokens=50000", "prompt=es"]) == 0
    assert build_context("cfg", system_prompt="")["budget"] == 50000
    assert recap(["configure", "cfg", "batch_size=zero"]) == 1
    capsys.readouterr()
    # No KEY=VALUE: it prints the overrides and changes nothing.
    assert recap(["configure", "cfg"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "session_id": "cfg", "overrides": {"context_budget_tokens": 50000, "prompt": "es"}}
    assert build_context("cfg", system_prompt="")["budget"] == 50000
    assert recap(["configure", "cfg", "prompt=es", "--reset"]) == 1  # one or the other
    assert recap(["configure", "cfg", "--reset"]) == 0
    assert build_context("cfg", system_prompt="")["budget"] == get_settings().context_budget_tokens
    capsys.readouterr()
    assert recap(["configure", "cfg"]) == 0
    assert json.loads(capsys.readouterr().out)["overrides"] is None
    assert recap(["configure", "no-such-session"]) == 1  # read only: nothing created
    assert session_row("no-such-session") is None


def test_resummarize_of_a_leased_session_is_busy(settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_ARCHIVE_SUMMARIZED="true")
    seed("busy", 12)
    run("busy")
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "busy")
                  .values(lease_token="a-job", lease_expires_at=utcnow() + timedelta(minutes=5)))
    with pytest.raises(SessionBusy, match="is being summarized"):
        resummarize("busy", res=get_resources())
    row = session_row("busy")
    assert row is not None and row.lease_token == "a-job" and row.summary_version == 1


def test_a_failed_resummarize_apply_releases_its_lease(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    """The rebuild's write fails and writes nothing: the lease goes with it, so the
    session's next job runs instead of waiting for the lease to expire."""
    settings_env(**LOW, RECAP_ARCHIVE_SUMMARIZED="true")
    ids = seed("refused", 12)
    run("refused")
    before = session_row("refused")
    assert before is not None
    with refusing_inserts("summary_runs", "refused"), \
            pytest.raises(DBAPIError, match=REFUSED):
        resummarize("refused", res=get_resources())
    row = session_row("refused")
    assert row is not None and row.lease_token is None and row.lease_expires_at is None
    assert (row.summary_version, row.rolling_summary) == (before.summary_version,
                                                          before.rolling_summary)
    ids += seed("refused", 5)
    run("refused", 2)
    assert statuses("refused") == ["applied", "applied"]
    with transaction() as s:
        assert check_invariants(s, written={"refused": ids}) == []


@pytest.mark.parametrize("change", ["lease taken over", "version changed"])
def test_resummarize_superseded_during_the_call_changes_nothing(
        fake_api: FakeAnthropic, settings_env: Callable[..., None], change: str) -> None:
    settings_env(**LOW, RECAP_ARCHIVE_SUMMARIZED="true")
    ids = seed("raced", 12)
    run("raced")
    before = session_row("raced")
    assert before is not None
    gate = fake_api.hold()
    errors: list[BaseException] = []

    def rebuild() -> None:
        try:
            resummarize("raced", res=get_resources())
        except BaseException as exc:  # asserted below
            errors.append(exc)

    thread = threading.Thread(target=rebuild)
    thread.start()
    gate.wait_entered()
    with transaction() as s:
        # The lease expired during the call and another holder took the session;
        # or a job applied between resummarize's read and its taking the lease.
        values: dict[str, object] = (
            {"lease_token": "another-job"} if change == "lease taken over"
            else {"summary_version": ChatSession.summary_version + 1})
        s.execute(update(ChatSession).where(ChatSession.id == "raced").values(**values))
    gate.release()
    thread.join(30)
    assert not thread.is_alive()
    assert [type(e) for e in errors] == [Superseded]
    row = session_row("raced")
    assert row is not None and row.rolling_summary == before.rolling_summary
    assert statuses("raced") == ["applied"]  # no run recorded for the rebuild
    if change == "lease taken over":
        assert (row.lease_token, row.summary_version) == ("another-job", 1)
    else:  # resummarize still held the lease: it must not keep it
        assert (row.lease_token, row.lease_expires_at, row.summary_version) == (None, None, 2)
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "raced")
                  .values(lease_token=None, lease_expires_at=None, summary_version=1))
        assert check_invariants(s, written={"raced": ids}) == []
