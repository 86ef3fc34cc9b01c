"""The mining call sees the user's most relevant stored memories and may say a new
fact replaces one: the old row is kept, superseded, never shown."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from sqlalchemy import select

from recap.api.context import build_context
from recap.api.ingest import add_message
from recap.core.memories.facts import Fact
from recap.db import transaction
from recap.models import Memory
from recap.store.rows import save_memories
from recap.testing import FakeAnthropic, ok
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from tests.helpers import LOW, sentence


@pytest.fixture(autouse=True)
def mining(settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_EXTRACT_MEMORIES="true")


def stored() -> dict[str, int | None]:
    with transaction() as s:
        return {m.fact: m.superseded_by for m in s.scalars(select(Memory))}


def seed(sid: str, user: str) -> int:
    """A stored memory of ``user`` (from an earlier session) and a batch that moves them."""
    with transaction() as s:
        add_message("old", "user", "hello", user_id=user, db=s)
        [lisbon] = save_memories("old", [Fact("The user lives in Lisbon", "personal", 4)],
                                 db=s, first_id=1, last_id=1)
    for i in range(12):
        text = "I moved from Lisbon to Porto last week." if i == 4 else sentence(i, 40)
        add_message(sid, "user" if i % 2 == 0 else "assistant", text, user_id=user)
    return lisbon


def answer(*facts: dict[str, object]) -> str:
    return json.dumps({"summary": "The user moved from Lisbon to Porto.", "facts": list(facts)})


def test_the_call_offers_known_memories_and_a_replacement_supersedes_the_old_one(
        fake_api: FakeAnthropic) -> None:
    lisbon = seed("s", "ana")
    fake_api.script(ok(answer({"fact": "The user lives in Porto", "category": "personal",
                               "importance": 4, "replaces": lisbon})))
    assert summarize("s", job=Job(), res=get_resources()).status == "applied"

    prompt = fake_api.prompts()[0]
    assert "<known_facts>" in prompt and f"{lisbon}: The user lives in Lisbon" in prompt
    facts = stored()
    porto = facts["The user lives in Porto"]
    assert porto is None  # live
    assert facts["The user lives in Lisbon"] is not None  # kept for audit, superseded
    shown = json.dumps(build_context("s", system_prompt=""))  # system and the last turn
    assert "lives in Porto" in shown and "lives in Lisbon" not in shown


def test_a_replaces_id_that_was_not_offered_is_ignored(fake_api: FakeAnthropic) -> None:
    seed("s", "ana")
    with transaction() as s:  # another user's memory: its id is never offered to "s"
        add_message("x", "user", "hi", user_id="bob", db=s)
        [bobs] = save_memories("x", [Fact("Bob likes tea", "preference", 3)], db=s,
                               first_id=1, last_id=1)
    fake_api.script(ok(answer({"fact": "The user likes coffee", "category": "preference",
                               "importance": 3, "replaces": bobs})))
    assert summarize("s", job=Job(), res=get_resources()).status == "applied"
    assert "Bob likes tea" not in fake_api.prompts()[0]
    assert stored()["Bob likes tea"] is None  # untouched


def test_without_stored_memories_the_prompt_has_no_known_block(fake_api: FakeAnthropic) -> None:
    for i in range(12):
        add_message("s", "user" if i % 2 == 0 else "assistant", sentence(i, 40))
    assert summarize("s", job=Job(), res=get_resources()).status == "applied"
    assert "<known_facts>" not in fake_api.prompts()[0]
