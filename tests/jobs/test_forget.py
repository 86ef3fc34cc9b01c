"""``recap.forget`` / ``recap forget``: everything stored about a session or a user
goes in one transaction, other users keep theirs, and a job in flight cannot bring
any of it back."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import select, text, update

from recap import forget
from recap.api.context import build_context
from recap.api.ingest import add_message
from recap.cli import main as recap
from recap.core.memories.facts import Fact
from recap.db import transaction
from recap.errors import InvalidInput, TransientLLMError
from recap.models import Base, ChatSession, Memory
from recap.store.rows import save_memories
from recap.testing import FakeAnthropic, error, ok
from recap.worker.jobs.outcome import Job, Outcome
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from recap.worker.jobs.titles import title_session
from tests.helpers import LOW, assert_invariants, message_ids, sentence, statuses, wait_for

PLANT = "zqx-plant-{}-9371"  # a string only the chat text of one user holds


@pytest.fixture(autouse=True)
def mining_and_archive(settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_EXTRACT_MEMORIES="true", RECAP_ARCHIVE_SUMMARIZED="true")


def answer(summary: str, *facts: str) -> str:
    """A record_summary tool input (summary and facts in one call), as the fake takes it."""
    return json.dumps({"summary": summary, "facts": [
        {"fact": t, "category": "personal", "importance": 4} for t in facts]})


def seed_user(user: str, sid: str, n: int = 12) -> list[int]:
    """``n`` messages of ``user`` in ``sid``, each carrying the user's plant."""
    return [add_message(sid, "user" if i % 2 == 0 else "assistant",
                        f"{sentence(i, 12)} {PLANT.format(user)}", user_id=user)
            for i in range(n)]


def job(sid: str, *, final: bool = True) -> Outcome:
    return summarize(sid, job=Job(task_id="t-forget", final_attempt=final),
                     res=get_resources())


def everything_stored() -> Iterator[tuple[str, str]]:
    """(table, value as text) of every column of every row of every table."""
    with transaction() as s:
        for table in Base.metadata.sorted_tables:
            for row in s.execute(select(table)):
                for value in row:
                    if value is not None:
                        yield table.name, str(value)


def traces(*needles: str) -> list[tuple[str, str]]:
    return [(t, v) for t, v in everything_stored() if any(n in v for n in needles)]


def history(fake_api: FakeAnthropic, user: str, sid: str) -> list[int]:
    """A session with a summary, archived rows, memories, a title, a failed run (its
    error quotes the user's text) and an applied one."""
    ids = seed_user(user, sid)
    fake_api.script(error(500, f"upstream echoed {PLANT.format(user)}"))
    with pytest.raises(TransientLLMError):
        job(sid, final=False)
    assert statuses(sid) == ["failed"]
    fake_api.script(ok(answer(f"Summary of {PLANT.format(user)}.",
                              f"The user said {PLANT.format(user)}.")))
    assert job(sid).status == "applied"
    fake_api.script(ok(f"Title {PLANT.format(user)}"))
    assert title_session(sid, res=get_resources())
    return ids


def test_forgetting_a_user_leaves_nothing_of_them_and_keeps_the_others(
        fake_api: FakeAnthropic) -> None:
    history(fake_api, "alice-u7", "alice-s1")
    history(fake_api, "alice-u7", "alice-s2")
    bob = history(fake_api, "bob-u9", "bob-s1")
    assert traces("alice-", PLANT.format("alice-u7"))  # planted everywhere first
    bob_before = traces("bob-", PLANT.format("bob-u9"))

    counts = forget(user_id="alice-u7")

    # Memories: the user's own sentence both sessions stated (one row, the user's
    # scope) and the model's paraphrase of it in each session's scope
    # (recap.core.memories.verbatim).
    assert counts == {"memories": 3, "archived_messages": 10, "chat_messages": 14,
                      "summary_runs": 4, "title_runs": 2, "stored_keys": 0, "idempotency_keys": 0,
                      "chat_sessions": 2}
    assert traces("alice-", PLANT.format("alice-u7")) == []
    assert traces("bob-", PLANT.format("bob-u9")) == bob_before
    assert_invariants({"bob-s1": bob})
    assert forget(user_id="alice-u7") == dict.fromkeys(counts, 0)  # safe to repeat


def test_forgetting_one_session_keeps_the_users_other_sessions(
        fake_api: FakeAnthropic) -> None:
    history(fake_api, "carol-u1", "carol-s1")
    ids = seed_user("carol-u1", "carol-s2")
    fake_api.script(ok(answer("Summary two.", "The user keeps bees.")))
    assert job("carol-s2").status == "applied"
    counts = forget(session_id="carol-s1")
    # The user's sentence (stated by carol-s1 alone) and the model's paraphrase.
    assert counts["chat_sessions"] == 1 and counts["memories"] == 2
    assert traces("carol-s1") == []
    with transaction() as s:
        assert list(s.scalars(select(Memory.fact))) == ["The user keeps bees."]
    assert "bees" in json.dumps(build_context("carol-s2", system_prompt=""))
    assert_invariants({"carol-s2": ids})


def test_a_job_held_mid_call_cannot_bring_the_session_back(fake_api: FakeAnthropic) -> None:
    seed_user("hank-u3", "hank-s1")
    fake_api.script(ok(answer(f"Summary {PLANT.format('hank-u3')}",
                              f"The user said {PLANT.format('hank-u3')}.")))
    gate = fake_api.hold()
    outcome: list[Outcome] = []
    worker = threading.Thread(target=lambda: outcome.append(job("hank-s1")))
    worker.start()
    gate.wait_entered()  # the job holds the lease and its summary call is in flight
    counts = forget(user_id="hank-u3")
    assert counts["chat_messages"] == 12 and counts["chat_sessions"] == 1
    gate.release()
    worker.join(60)
    assert not worker.is_alive()
    assert [(o.status, o.reason) for o in outcome] == [
        ("superseded", "the lease or summary version changed during the call")]
    assert traces("hank-", PLANT.format("hank-u3")) == []
    assert statuses("hank-s1") == []


def test_a_title_call_in_flight_records_nothing_after_the_forget(
        fake_api: FakeAnthropic) -> None:
    add_message("tina-s1", "user", "Plan my trip", user_id="tina-u2")
    add_message("tina-s1", "assistant", "Sure")
    fake_api.script(ok("Trip planning"))
    gate = fake_api.hold()
    worker = threading.Thread(target=lambda: title_session("tina-s1", res=get_resources()))
    worker.start()
    gate.wait_entered()
    forget(session_id="tina-s1")
    gate.release()
    worker.join(30)
    assert traces("tina-") == []


def waiting_for_a_lock() -> bool:
    with transaction() as s:
        return bool(s.scalar(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'")))


def test_an_apply_committing_during_the_forget_is_erased_with_the_rest() -> None:
    ids = seed_user("ivy-u4", "ivy-s1", n=3)
    done: list[dict[str, int]] = []
    forgetting = threading.Thread(target=lambda: done.append(forget(user_id="ivy-u4")))
    with transaction() as apply:  # stands in for apply_summary's transaction
        apply.execute(update(ChatSession).where(ChatSession.id == "ivy-s1")
                      .values(rolling_summary=f"Summary {PLANT.format('ivy-u4')}"))
        save_memories("ivy-s1", [Fact(f"The user said {PLANT.format('ivy-u4')}.", "fact", 3)],
                      db=apply, first_id=ids[0], last_id=ids[1])
        forgetting.start()
        wait_for(waiting_for_a_lock, what="forget to wait for the apply's row lock")
    forgetting.join(30)
    assert not forgetting.is_alive()
    assert done[0]["memories"] == 1 and done[0]["chat_sessions"] == 1
    assert traces("ivy-", PLANT.format("ivy-u4")) == []


@pytest.mark.unit
@pytest.mark.parametrize(("kwargs", "problem"), [
    ({}, "exactly one of session_id or user_id"),
    ({"session_id": "s", "user_id": "u"}, "exactly one of session_id or user_id"),
    ({"user_id": ""}, "user_id is empty"), ({"session_id": 7}, "session_id must be a str")])
def test_forget_needs_exactly_one_usable_id(kwargs: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        forget(**kwargs)


def test_recap_forget_prints_what_it_erased(capsys: pytest.CaptureFixture[str]) -> None:
    seed_user("cli-u", "cli-s", n=3)
    assert recap(["forget", "--session", "cli-s"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "forgot session 'cli-s': 4 rows erased"
    assert "  chat_messages      3" in out and "  chat_sessions      1" in out
    assert message_ids("cli-s") == []
    assert recap(["forget", "--user", "cli-u", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chat_sessions"] == 0
    assert recap(["forget", "--session", "a", "--user", "b"]) == 2  # a usage error
