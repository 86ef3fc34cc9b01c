"""``PATCH /v1/sessions/{id}/messages/{id}`` on a tool result Recap cleared to a stub,
with the content ``/context`` shows: the stub kept keeps its original (recall
still quotes it); a stub changed, or one Recap did not write, is a 422 that names
the problem, and nothing changes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from recap.cli import main as recap
from recap.core.context.lookback import RECALL_TAG
from recap.core.retention.stubs import is_stub
from tests.sessions.test_edit import FIXED, QUIET, TASKS, TYPO, log

pytestmark = pytest.mark.system


def add(api: httpx.Client, sid: str, role: str, content: object) -> int:
    r = api.post(f"/v1/sessions/{sid}/messages", json={"role": role, "content": content})
    assert r.status_code == 201, r.text
    return int(r.json()["messages"][0]["id"])


def context(api: httpx.Client, sid: str) -> list[Any]:
    r = api.post(f"/v1/sessions/{sid}/context", json={"system_prompt": ""})
    assert r.status_code == 200, r.text
    return [m["content"] for m in r.json()["messages"]]


def result_of(api: httpx.Client, sid: str, tool_use_id: str) -> list[dict[str, Any]]:
    """The content of the message holding the tool result, as /context shows it."""
    return next(c for c in context(api, sid) if isinstance(c, list) and any(
        b.get("tool_use_id") == tool_use_id for b in c))


def test_a_patch_keeping_a_stub_keeps_its_original_and_one_losing_it_is_a_422(
        api: httpx.Client, settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET)
    sid = "http-edit-stub"
    results = []
    for k in range(TASKS):
        add(api, sid, "user", "Please read the next log file.")
        add(api, sid, "assistant", [{"type": "tool_use", "id": f"toolu_{k}",
                                     "name": "read_file", "input": {"path": f"logs/{k}"}}])
        results.append(add(api, sid, "user", [
            {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": log(k)},
            {"type": "text", "text": TYPO}]))
        add(api, sid, "assistant", "Read it; nothing stands out.")
    assert recap(["summarize", sid, "--now"]) == 0  # clears the old tool results
    shown = result_of(api, sid, "toolu_0")
    assert is_stub(shown[0]["content"])

    fixed = [shown[0], {**shown[1], "text": FIXED}]
    r = api.patch(f"/v1/sessions/{sid}/messages/{results[0]}", json={"content": fixed})
    assert r.status_code == 200, r.text
    assert result_of(api, sid, "toolu_0") == fixed

    changed = [{**shown[0], "content": "redacted"}, fixed[1]]
    r = api.patch(f"/v1/sessions/{sid}/messages/{results[0]}", json={"content": changed})
    assert r.status_code == 422, r.text
    assert "'toolu_0' was cleared to a stub" in r.json()["error"]["message"]
    newest = result_of(api, sid, f"toolu_{TASKS - 1}")
    forged = [{**newest[0], "content": shown[0]["content"]}, newest[1]]
    r = api.patch(f"/v1/sessions/{sid}/messages/{results[-1]}", json={"content": forged})
    assert r.status_code == 422, r.text
    assert "reads as a stub Recap writes" in r.json()["error"]["message"]
    assert result_of(api, sid, "toolu_0") == fixed
    assert result_of(api, sid, f"toolu_{TASKS - 1}") == newest

    add(api, sid, "user", "What caused ERR-4401?")
    recalled = [b["text"] for b in context(api, sid)[-1] if isinstance(b, dict)
                and b.get("text", "").startswith(f"<{RECALL_TAG}>")]
    assert len(recalled) == 1 and "ERR-4401 in src/api/handler0.py" in recalled[0]
