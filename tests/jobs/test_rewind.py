"""Rewind and edit: inside the active window, at the summary boundary, deep inside
summarized history with and without the archive, against a job mid-call, and
then summarizing on; nothing lost that should stay, nothing resurrected."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from recap import edit_message, rewind, summary_at
from recap.api.ingest import add_message
from recap.cli import main
from recap.db import transaction, utcnow
from recap.errors import InvalidInput, SessionBusy
from recap.models import ArchivedMessage, ChatMessage, ChatSession, Memory
from recap.testing import FakeAnthropic, ok
from recap.worker.jobs.outcome import Job, Outcome
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from tests.helpers import LOW, assert_invariants, message_ids, runs, seed, session_of, session_row


@pytest.fixture(autouse=True)
def low(settings_env: Callable[..., None]) -> None:
    settings_env(**LOW)


def fold(sid: str, fake_api: FakeAnthropic, n: int = 1) -> None:
    for _ in range(n):
        fake_api.script(ok(f"Summary v{session_of(sid).summary_version + 1}."))
        out = summarize(sid, job=Job(task_id="t"), res=get_resources(), force=True)
        assert out.status == "applied", out


def archived_ids(sid: str) -> list[int]:
    with transaction() as s:
        return list(s.scalars(select(ArchivedMessage.id).where(ArchivedMessage.session_id == sid)
                              .order_by(ArchivedMessage.id)))


def contents(sid: str) -> list[str]:
    with transaction() as s:
        return list(s.scalars(select(ChatMessage.content).where(ChatMessage.session_id == sid)
                              .order_by(ChatMessage.id)))


def test_rewind_inside_the_active_window(caplog: pytest.LogCaptureFixture) -> None:
    ids = seed("active", 12)
    with caplog.at_level(logging.INFO, logger="recap.worker.jobs"):
        done = rewind("active", ids[7])
    assert (done.deleted, done.restored, done.restored_version) == (4, 0, None)
    assert message_ids("active") == ids[:8]
    row = session_row("active")
    assert row is not None and row.message_count == 8 and row.summary_version == 1
    (run,) = runs("active")
    assert (run.status, run.rewound_after, run.last_message_id, run.messages_condensed) == (
        "applied", ids[7], ids[11], 0)
    assert '"event": "rewind"' in caplog.text and '"deleted": 4' in caplog.text
    # Regenerate: the new reply follows the kept turns.
    ids = ids[:8] + [add_message("active", "assistant", "a new reply")]
    assert_invariants({"active": ids})


def test_rewind_at_the_summary_boundary_needs_no_archive(fake_api: FakeAnthropic) -> None:
    ids = seed("boundary", 14)
    fold("boundary", fake_api)
    done = rewind("boundary", ids[4])  # the newest condensed message
    assert done.deleted == 9 and message_ids("boundary") == []
    assert session_of("boundary").rolling_summary == "Summary v1."
    assert_invariants({"boundary": ids})


def test_rewind_into_summarized_history_without_archive_is_refused(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(RECAP_ARCHIVE_SUMMARIZED="false")
    ids = seed("no-archive", 14)
    fold("no-archive", fake_api)
    before = session_row("no-archive")
    with pytest.raises(InvalidInput, match="RECAP_ARCHIVE_SUMMARIZED=true") as err:
        rewind("no-archive", ids[2])
    assert f"messages up to {ids[4]} are condensed" in str(err.value)
    after = session_row("no-archive")
    assert after is not None and before is not None
    assert (after.summary_version, after.message_count) == (before.summary_version,
                                                            before.message_count)
    with pytest.raises(InvalidInput, match="its text was not kept"):
        edit_message("no-archive", ids[2], "edited")
    assert_invariants({"no-archive": ids})


def test_rewind_deep_inside_summarized_history_with_archive(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_ARCHIVE_SUMMARIZED="true", RECAP_EXTRACT_MEMORIES="true")
    ids = seed("deep", 20)
    ids.append(add_message("deep", "user", "FACT: the user lives in Porto"))
    ids += seed("deep", 8)
    fold("deep", fake_api, 4)  # condenses ids[0..19] in batches of 5
    assert not any("Porto" in f for f in _memories("deep"))  # ids[20] not condensed yet
    fold("deep", fake_api)  # ids[20..24]: mines the Porto fact
    assert any("Porto" in f for f in _memories("deep"))
    done = rewind("deep", ids[12])
    # Version 2 covered ids[0..9]: restored; ids[10..12] back in the window with
    # their original ids and text; everything after ids[12] gone, archive included.
    assert done.restored_version == 2 and done.restored == 3
    assert message_ids("deep") == ids[10:13]
    assert archived_ids("deep") == ids[:10]
    row = session_row("deep")
    assert row is not None and row.rolling_summary == summary_at("deep", 2).text
    assert row.summary_version == 6 and row.summarized_message_count == 10
    assert not any("Porto" in f for f in _memories("deep"))  # mined from an undone batch
    assert_invariants({"deep": ids})
    # Summarizing continues from the restored state, and the checker still holds.
    ids = ids[:13] + seed("deep", 10)
    fold("deep", fake_api, 2)
    assert runs("deep")[-2].first_message_id == ids[10]  # the restored ones, condensed anew
    assert_invariants({"deep": ids})
    # Rewinding there again restores the same state: the versions of the runs the
    # first rewind undid (v3-v5) are never restore points.
    again = rewind("deep", ids[12])
    assert again.restored == 3 and message_ids("deep") == ids[10:13]
    assert session_of("deep").rolling_summary == summary_at("deep", 2).text
    assert_invariants({"deep": ids})  # the 10 messages after the point: rewound, not lost
    # Edit a summarized (archived) message: the error says how to rewind.
    with pytest.raises(InvalidInput, match=rf"rewind\(session_id, {ids[2]}\)"):
        edit_message("deep", ids[3], "edited")
    # Back to the very start: no summary, nothing left.
    done = rewind("deep", 0)
    assert message_ids("deep") == [] and archived_ids("deep") == []
    row = session_row("deep")
    assert row is not None and row.rolling_summary is None and row.summarized_message_count == 0
    assert_invariants({"deep": ids})


def _memories(sid: str) -> list[str]:
    with transaction() as s:
        return list(s.scalars(select(Memory.fact).where(Memory.session_id == sid)))


def _job_in_thread(sid: str) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(summarize(
        sid, job=Job(task_id="mid-call"), res=get_resources(), force=True)))
    thread.start()
    return thread, out


def test_rewind_meets_a_job_mid_call(fake_api: FakeAnthropic) -> None:
    ids = seed("race", 14)
    gate = fake_api.hold()
    thread, out = _job_in_thread("race")
    gate.wait_entered()
    with pytest.raises(SessionBusy, match="retry"):
        rewind("race", ids[10], wait_s=0.2)
    with pytest.raises(SessionBusy):
        edit_message("race", ids[12], "edited", wait_s=0.2)
    gate.release()
    thread.join(30)
    assert isinstance(out[0], Outcome) and out[0].status == "applied"
    rewind("race", ids[10])
    assert message_ids("race") == ids[5:11]
    assert_invariants({"race": ids})


def test_a_job_whose_lease_expired_finds_its_fence_broken(fake_api: FakeAnthropic) -> None:
    ids = seed("zombie", 14)
    gate = fake_api.hold()
    thread, out = _job_in_thread("zombie")
    gate.wait_entered()
    with transaction() as s:  # the job outlived its lease (a stuck worker)
        s.execute(update(ChatSession).where(ChatSession.id == "zombie")
                  .values(lease_expires_at=utcnow() - timedelta(seconds=1)))
    rewind("zombie", ids[2])
    gate.release()
    thread.join(30)
    assert out[0].status == "superseded"  # changed nothing: the batch is not resurrected
    assert message_ids("zombie") == ids[:3]
    assert_invariants({"zombie": ids})


def test_edit_an_active_message(capsys: pytest.CaptureFixture[str]) -> None:
    ids = seed("edit", 6)
    before = session_row("edit")
    edited = edit_message("edit", ids[3], [{"type": "text", "text": "a much longer answer " * 20}])
    row = session_row("edit")
    assert row is not None and before is not None
    assert row.active_tokens > before.active_tokens and row.message_count == 6
    with transaction() as s:
        msg = s.get(ChatMessage, ids[3])
        assert msg is not None and msg.blocks and msg.token_count == edited.token_count
    assert main(["edit", "edit", str(ids[4]), "--content", "short"]) == 0
    assert f'"message_id": {ids[4]}' in capsys.readouterr().out
    assert contents("edit")[4] == "short"
    with pytest.raises(InvalidInput, match=r"content\[0\] \(text\): text is empty"):
        edit_message("edit", ids[4], [{"type": "text", "text": " "}])
    assert main(["rewind", "edit", "--after", str(ids[1])]) == 0
    assert message_ids("edit") == ids[:2]
    assert_invariants({"edit": ids})


def test_the_checker_still_catches_a_loss_after_a_rewind() -> None:
    from sqlalchemy import delete

    from tests.checks import check_invariants

    ids = seed("caught", 10)
    rewind("caught", ids[5])
    with transaction() as s:  # a bug deletes a message the rewind kept
        s.execute(delete(ChatMessage).where(ChatMessage.id == ids[2]))
        s.execute(update(ChatSession).where(ChatSession.id == "caught").values(
            message_count=ChatSession.message_count - 1,
            active_tokens=ChatSession.active_tokens - 1))
    with transaction() as s:
        problems = check_invariants(s, written={"caught": ids})
    assert f"caught: message {ids[2]} is gone and inside 0 applied runs (lost)" in problems


def test_a_memory_superseded_from_an_undone_batch_is_live_again(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    from sqlalchemy import insert

    settings_env(**LOW, RECAP_ARCHIVE_SUMMARIZED="true")
    ids = seed("moved", 14)
    fold("moved", fake_api, 2)  # ids[0..9]
    with transaction() as s:
        old = s.execute(insert(Memory).values(
            session_id="moved", scope="s:moved", fact="lives in Lisbon", fact_hash="a" * 64,
            category="personal", importance=3, first_message_id=ids[0],
            last_message_id=ids[4]).returning(Memory.id)).scalar_one()
        new = s.execute(insert(Memory).values(
            session_id="moved", scope="s:moved", fact="moved to Porto", fact_hash="b" * 64,
            category="personal", importance=3, first_message_id=ids[5],
            last_message_id=ids[9]).returning(Memory.id)).scalar_one()
        s.execute(update(Memory).where(Memory.id == old).values(superseded_by=new))
    done = rewind("moved", ids[6])  # undoes the batch that said "moved to Porto"
    assert done.memories_deleted == 1
    with transaction() as s:
        assert [(m.fact, m.superseded_by) for m in s.scalars(
            select(Memory).where(Memory.session_id == "moved"))] == [("lives in Lisbon", None)]
    assert_invariants({"moved": ids})
