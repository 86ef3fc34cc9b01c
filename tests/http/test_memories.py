"""Memories over HTTP: listed with their sources, deleted by the kind of source
that stated them, by session or by user (``user`` with the unverified paraphrases
of what the user said); a bad kind is a 422 that names the kinds."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from recap.api.ingest import add_message
from recap.testing import FakeAnthropic
from tests.helpers import run_and_wait, sentence, statuses
from tests.sessions.test_forget import PARAPHRASE, TOOL_FACT, stated

pytestmark = pytest.mark.system

FACT = "The user is allergic to peanuts."
WHOLE = {"RECAP_POLICY": "threshold",
         "RECAP_TRIGGER_MESSAGES": 10, "RECAP_TRIGGER_TOKENS": 100, "RECAP_BATCH_SIZE": 200,
         "RECAP_KEEP_RECENT": 2, "RECAP_EXTRACT_MEMORIES": "true"}


def say(sid: str, user: str) -> None:
    add_message(sid, "user", f"Note this.\nFACT: {FACT}", user_id=user)
    for i in range(11):
        add_message(sid, "assistant" if i % 2 == 0 else "user", sentence(i, 30))
    run_and_wait(sid)
    assert statuses(sid) == ["applied"]


def test_memories_are_listed_with_sources_and_deleted_by_source(
        api: httpx.Client, celery_worker_thread: object, fake_api: FakeAnthropic,
        settings_env: Callable[..., None]) -> None:
    settings_env(**WHOLE)
    say("mem-a", "u-mem")
    say("mem-b", "u-mem")
    r = api.get("/v1/sessions/mem-b/memories")
    assert r.status_code == 200, r.text
    [memory] = r.json()["memories"]
    assert memory["fact"] == FACT
    assert [(s["session_id"], s["kind"]) for s in memory["sources"]] == [("mem-a", "user"),
                                                                          ("mem-b", "user")]
    # Another kind deletes nothing; one session's user source leaves the other's.
    r = api.delete("/v1/sessions/mem-a/memories", params={"source": "tool"})
    assert r.status_code == 200 and r.json() == {"deleted": 0}
    r = api.delete("/v1/sessions/mem-a/memories", params={"source": "user"})
    assert r.status_code == 200 and r.json() == {"deleted": 0}
    [memory] = api.get("/v1/sessions/mem-b/memories").json()["memories"]
    assert [s["session_id"] for s in memory["sources"]] == ["mem-b"]
    r = api.delete("/v1/users/u-mem/memories", params={"source": "user"})
    assert r.status_code == 200 and r.json() == {"deleted": 1}
    assert api.get("/v1/sessions/mem-b/memories").json() == {"memories": []}


def test_a_bad_source_or_session_is_a_clear_error(api: httpx.Client) -> None:
    add_message("mem-c", "user", "hello")
    r = api.delete("/v1/sessions/mem-c/memories", params={"source": "stranger"})
    assert r.status_code == 422 and "tool" in r.json()["error"]["message"]
    r = api.delete("/v1/sessions/mem-c/memories")
    assert r.status_code == 422 and "source" in r.json()["error"]["message"]
    assert api.get("/v1/sessions/no-such-session/memories").status_code == 404


def test_deleting_what_a_user_stated_deletes_its_unverified_paraphrases(
        api: httpx.Client, celery_worker_thread: object, fake_api: FakeAnthropic,
        settings_env: Callable[..., None]) -> None:
    settings_env(**WHOLE)
    for sid in ("mem-p1", "mem-p2"):
        assert stated(fake_api, sid, "u-para")[PARAPHRASE] == ["unverified"]
    r = api.delete("/v1/users/u-para/memories", params={"source": "user"})
    assert r.status_code == 200 and r.json() == {"deleted": 3}  # one sentence, 2 paraphrases
    for sid in ("mem-p1", "mem-p2"):
        left = api.get(f"/v1/sessions/{sid}/memories").json()["memories"]
        assert [(m["fact"], [s["kind"] for s in m["sources"]]) for m in left] == [
            (TOOL_FACT, ["tool"])]
