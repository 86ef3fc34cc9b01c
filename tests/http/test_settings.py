"""PUT .../settings replaces a session's overrides, PATCH merges into them (null
removes one); an unknown session is 404 unless ``?create=true``; a model Recap
does not know is stored with a warning naming the nearest known one."""

from __future__ import annotations

import httpx
import pytest

from tests.helpers import session_row

pytestmark = pytest.mark.system

SAID = {"role": "user", "content": "Plan the Lisbon trip"}


def _settings(r: httpx.Response) -> dict[str, object] | None:
    assert r.status_code == 200, r.text
    overrides: dict[str, object] | None = r.json()["overrides"]
    return overrides


def test_patch_merges_and_put_replaces(api: httpx.Client) -> None:
    sid = "settings-merge"
    assert api.post(f"/v1/sessions/{sid}/messages", json=SAID).status_code == 201
    url = f"/v1/sessions/{sid}/settings"
    assert _settings(api.patch(url, json={"keep_recent": 6})) == {"keep_recent": 6}
    assert _settings(api.patch(url, json={"prompt": "es"})) == {"keep_recent": 6,
                                                                 "prompt": "es"}
    assert _settings(api.patch(url, json={"keep_recent": None})) == {"prompt": "es"}
    assert api.get(f"/v1/sessions/{sid}").json()["overrides"] == {"prompt": "es"}
    # The merged set is validated as a whole: the fixed rule's keys need its policy,
    # whether it was given now or before.
    assert _settings(api.patch(url, json={"policy": "threshold"})) == {"prompt": "es",
                                                                        "policy": "threshold"}
    merged = _settings(api.patch(url, json={"trigger_tokens": 4000}))
    assert merged is not None and merged["trigger_tokens"] == 4000
    refused = api.patch(url, json={"policy": "adaptive"})
    assert refused.status_code == 422, refused.text
    assert "trigger_tokens" in refused.json()["error"]["message"]
    assert _settings(api.put(url, json={"keep_recent": 4})) == {"keep_recent": 4}
    assert _settings(api.patch(url, json={})) == {"keep_recent": 4}
    assert _settings(api.put(url, json={})) is None


def test_an_unknown_session_is_404_unless_created(api: httpx.Client) -> None:
    for method in ("PUT", "PATCH"):
        r = api.request(method, "/v1/sessions/SESSION_ID/settings", json={"keep_recent": 4})
        assert r.status_code == 404, r.text
        assert r.json() == {"error": {"type": "not_found",
                                      "message": "no chat session with id 'SESSION_ID'"}}
    assert session_row("SESSION_ID") is None
    r = api.patch("/v1/sessions/settings-new/settings?create=true", json={"keep_recent": 4})
    assert _settings(r) == {"keep_recent": 4}
    row = session_row("settings-new")
    assert row is not None and row.overrides == {"keep_recent": 4}


def test_an_unknown_model_is_stored_with_a_warning(api: httpx.Client) -> None:
    sid = "settings-model"
    assert api.post(f"/v1/sessions/{sid}/messages", json=SAID).status_code == 201
    r = api.patch(f"/v1/sessions/{sid}/settings", json={"model": "claude-sonet-5-5"})
    assert _settings(r) == {"model": "claude-sonet-5-5"}
    (warning,) = r.json()["warnings"]
    assert "'claude-sonet-5-5'" in warning and "did you mean 'claude-sonnet-5-5'" in warning
    r = api.put(f"/v1/sessions/{sid}/settings", json={"model": "claude-sonnet-4-5-20250929"})
    assert r.json()["warnings"] == []


def test_the_schema_documents_both(api: httpx.Client) -> None:
    ops = api.get("/openapi.json").json()["paths"]["/v1/sessions/{session_id}/settings"]
    assert set(ops) == {"put", "patch"}
    assert "Replace" in ops["put"]["summary"] and "null removes" in ops["patch"]["summary"]
    for op in ops.values():
        assert "404" in op["responses"]
        assert [p["name"] for p in op["parameters"]] == ["session_id", "create"]
