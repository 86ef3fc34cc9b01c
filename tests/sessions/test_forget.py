"""``recap.forget_memories(..., source="user")`` and ``recap forget --source user``:
forgetting what a user stated forgets the model's unverified paraphrases of it too,
in every session of the user; what a tool said, and another user's memories, stay."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from recap import add_message, forget_memories
from recap.cli import main as recap
from recap.sessions.overrides import memories
from recap.testing import FakeAnthropic, ok
from tests.helpers import LOW, run_and_wait, sentence, statuses

pytestmark = pytest.mark.usefixtures("celery_worker_thread")

SAID = "I'm flying with TAP, flight TP 1357, and my booking code is QX7K2P."
PARAPHRASE = "The user flies with TAP on flight TP1357, booking code QX7K2P."
TOOL_FACT = "The build server runs Ubuntu 24.04."


def stated(fake_api: FakeAnthropic, sid: str, user: str) -> dict[str, list[str]]:
    """One fold of a session where ``user`` states SAID and the model paraphrases it
    (unverified) beside a tool's fact; the session's memories by kind of source."""
    add_message(sid, "user", SAID, user_id=user)
    for i in range(11):
        add_message(sid, "assistant" if i % 2 == 0 else "user", sentence(i, 30))
    fake_api.script(ok(json.dumps({"summary": "The user booked a flight.", "facts": [
        {"fact": PARAPHRASE, "category": "plan", "importance": 4},
        {"fact": TOOL_FACT, "category": "fact", "importance": 3, "source": "tool"}]})))
    run_and_wait(sid)
    assert statuses(sid) == ["applied"]
    return kinds(sid)


def kinds(sid: str) -> dict[str, list[str]]:
    return {m["fact"]: sorted({s["kind"] for s in m["sources"]}) for m in memories(sid)}


@pytest.mark.parametrize("how", ["python", "cli"])
def test_forgetting_what_a_user_stated_forgets_its_unverified_paraphrases(
        how: str, fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_EXTRACT_MEMORIES="true")
    for sid in ("fg-a", "fg-b"):
        found = stated(fake_api, sid, "u-forget")
        assert found.pop(PARAPHRASE) == ["unverified"] and found.pop(TOOL_FACT) == ["tool"]
        assert "user" in sum(found.values(), [])  # the user's own sentence
    assert PARAPHRASE in stated(fake_api, "fg-other", "u-other")

    if how == "python":
        assert forget_memories(user_id="u-forget", source="user") == 3
    else:
        assert recap(["forget", "--user", "u-forget", "--source", "user", "--json"]) == 0
    for sid in ("fg-a", "fg-b"):
        assert kinds(sid) == {TOOL_FACT: ["tool"]}  # what a tool said stays
    assert kinds("fg-other")[PARAPHRASE] == ["unverified"]  # another user's stays
    # One session's forgetting reaches its own paraphrases only.
    assert forget_memories(session_id="fg-other", source="user") >= 2
    assert kinds("fg-other") == {TOOL_FACT: ["tool"]}
