"""Replies of Claude's server tools through a real ``recap serve``: stored as they
came, folded by the worker and archived unchanged, and replayed by /context
unchanged, opened by the compaction, accepted by the fake API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from recap.testing import validate_messages_request
from tests.helpers import wait_for
from tests.jobs.test_server_blocks import active, archived, conversation
from tests.sdk_request import sdk_problem
from tests.server_blocks import as_stored, compaction

pytestmark = pytest.mark.system


def _version(api: httpx.Client, sid: str) -> Any:
    r = api.get(f"/v1/sessions/{sid}")
    assert r.status_code == 200, r.text
    return r.json()["summary_version"]


def test_server_blocks_over_http_are_kept_folded_and_replayed_as_they_came(
        api: httpx.Client, celery_worker_thread: object, low: None,
        settings_env: Callable[..., None]) -> None:
    settings_env(RECAP_ARCHIVE_SUMMARIZED="true")
    sid = "http-server-blocks"
    sent: dict[int, Any] = {}
    for role, content in conversation():
        r = api.post(f"/v1/sessions/{sid}/messages", json={"role": role, "content": content})
        assert r.status_code == 201, r.text
        (stored,) = r.json()["messages"]
        sent[stored["id"]] = content
        if role == "assistant":
            assert api.post(f"/v1/sessions/{sid}/replied").status_code == 202
    wait_for(lambda: _version(api, sid) >= 1, timeout=60, what="the first fold")
    rows = archived(sid)
    assert len(rows) == 5
    assert [blocks for _, blocks in rows] == [
        as_stored(sent[i]) if isinstance(sent[i], list) else None for i, _ in rows]
    left = [c for i, c in sent.items() if i not in dict(rows)]
    assert active(sid) == [as_stored(c) if isinstance(c, list) else None for c in left]

    r = api.post(f"/v1/sessions/{sid}/context",
                 json={"system_prompt": "You plan trips.", "prompt_caching": False})
    assert r.status_code == 200, r.text
    messages = r.json()["messages"]
    assert messages == [{"role": "assistant", "content": [compaction()]},
                        {"role": "user", "content": "Thanks, and tomorrow?"},
                        {"role": "assistant", "content": "Tomorrow: Sintra."}]
    body = {"model": "claude-test", "max_tokens": 64, **r.json()["request"]}
    body["messages"].append({"role": "user", "content": "Great"})
    assert validate_messages_request(body) is None, validate_messages_request(body)
    assert sdk_problem(body, beta=True) is None
