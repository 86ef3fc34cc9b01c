"""What a caller names is bounded before it reaches a computation or a statement:
every setting has an upper bound (HTTP 422, `recap configure`, the environment)
and the outlook's arithmetic over one is closed-form; ids out of a column's range
are 422, never 500; every id the Python API accepts, "/" included, is one
percent-encoded path segment."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import quote

import httpx
import pytest

from recap import add_message
from recap.core.planning.outlook import tokens_to_capacity
from recap.errors import ConfigError, InvalidInput
from recap.sessions.edit import edit_message
from recap.settings import load_settings
from tests.helpers import message_ids
from tests.http.server import RECAP, Server

pytestmark = pytest.mark.system

T = TypeVar("T")


def _error(r: httpx.Response, status: int, type_: str) -> str:
    assert r.status_code == status, r.text
    assert set(r.json()["error"]) == {"type", "message"}
    assert r.json()["error"]["type"] == type_, r.text
    message: str = r.json()["error"]["message"]
    return message


def _returns(call: Callable[..., T], *args: object) -> T:
    """``call(*args)``'s result; fails (instead of hanging the suite) if it never ends."""
    out: list[T] = []
    worker = threading.Thread(target=lambda: out.append(call(*args)), daemon=True)
    worker.start()
    worker.join(60)
    assert out, f"{getattr(call, '__name__', call)}{args} did not return"
    return out[0]


@pytest.mark.parametrize("huge", [10**30, 1e30, 10**7 + 1])
def test_a_setting_above_its_bound_is_422_and_the_session_stays_readable(
        api: httpx.Client, huge: object) -> None:
    sid = "bounds-budget"
    assert api.post(f"/v1/sessions/{sid}/messages",
                    json={"role": "user", "content": "Plan the Lisbon trip"}).status_code == 201
    message = _error(api.put(f"/v1/sessions/{sid}/settings",
                             json={"context_budget_tokens": huge}), 422, "invalid_input")
    assert "context_budget_tokens" in message and "10000000" in message
    for key in ("trigger_messages", "trigger_tokens", "keep_recent"):
        r = api.put(f"/v1/sessions/{sid}/settings", json={key: 10**30})
        assert key in _error(r, 422, "invalid_input")
    r = api.get(f"/v1/sessions/{sid}")
    assert r.status_code == 200 and r.json()["overrides"] is None


def test_the_largest_budget_is_accepted_and_answered(api: httpx.Client) -> None:
    sid = "bounds-largest"
    assert api.post(f"/v1/sessions/{sid}/messages",
                    json={"role": "user", "content": "hello"}).status_code == 201
    r = api.put(f"/v1/sessions/{sid}/settings",
                json={"context_budget_tokens": 10**7, "trigger_tokens": 10**7,
                      "trigger_messages": 10**6, "policy": "threshold"})
    assert r.status_code == 200, r.text
    r = api.get(f"/v1/sessions/{sid}")
    assert r.status_code == 200 and r.json()["budget"] == 10**7


def test_the_capacity_outlook_is_closed_form() -> None:
    # A stepwise count on a float ratio that stops changing never ended here.
    assert 0.79 * 10**30 < _returns(tokens_to_capacity, 5, 7, 10**30) <= 0.81 * 10**30
    for budget in (1000, 32_000, 10**7):
        for used in (0, 1, budget // 2, budget - 1, budget):
            need = tokens_to_capacity(used, 0, budget)
            assert (used + need) / budget >= 0.8
            assert need == 0 or (used + need - 1) / budget < 0.8


def test_recap_configure_and_the_environment_name_the_bound() -> None:
    env = {k: v for k, v in os.environ.items() if k != "RECAP_CONTEXT_BUDGET_TOKENS"}
    done = subprocess.run([RECAP, "configure", "bounds-cli", f"context_budget_tokens={10**30}",
                           "--create"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "context_budget_tokens" in done.stderr and "10000000" in done.stderr
    assert "Traceback" not in done.stderr
    with pytest.raises(ConfigError, match=r"RECAP_CONTEXT_BUDGET_TOKENS.*1000 to 10000000"):
        load_settings(context_budget_tokens=10**30)


@pytest.mark.parametrize(("method", "path", "body"), [
    ("PATCH", "/v1/sessions/{sid}/messages/9223372036854775808", {"content": "x"}),
    ("PATCH", "/v1/sessions/{sid}/messages/-1", {"content": "x"}),
    ("GET", "/v1/sessions/{sid}/summaries/2147483648", None),
    ("GET", "/v1/sessions/{sid}/summaries/99999999999999999999999", None),
    ("POST", "/v1/sessions/{sid}/rewind", {"after_message_id": 2**63}),
    ("POST", "/v1/sessions/{sid}/rewind", {"after_message_id": 10**40}),
])
def test_an_id_out_of_range_is_422_not_500(server: Server, api: httpx.Client, method: str,
                                           path: str, body: object) -> None:
    sid = "bounds-ids"
    assert api.post(f"/v1/sessions/{sid}/messages",
                    json={"role": "user", "content": "hi"}).status_code == 201
    r = api.request(method, path.format(sid=sid), json=body)
    _error(r, 422, "invalid_input")
    assert "Traceback" not in server.logged() and "internal" not in r.text


def test_the_python_api_refuses_the_same_ids_by_name() -> None:
    with pytest.raises(InvalidInput, match="message_id must be a whole number from 1 to"):
        edit_message("bounds-py", 2**63, "x")


@pytest.mark.parametrize("sid", ["tenant/42", "projects/p1/chats/c9", "50%off/a b",
                                 "x/memories", "a//b/", "..", "é/ü"])
def test_every_id_is_one_percent_encoded_segment(api: httpx.Client, sid: str) -> None:
    add_message(sid, "user", "Stored through the Python API")
    path = "/v1/sessions/" + quote(sid, safe="").replace(".", "%2E")
    r = api.get(path)
    assert r.status_code == 200 and r.json()["session_id"] == sid, r.text
    r = api.post(path + "/messages", json={"role": "assistant", "content": "And over HTTP"})
    assert r.status_code == 201 and r.json()["session_id"] == sid
    assert api.post(path + "/context", json={"system_prompt": ""}).status_code == 200
    assert api.get(path + "/memories").status_code == 200
    assert len(message_ids(sid)) == 2
    r = api.delete(path)
    assert r.status_code == 200 and r.json()["deleted"]["chat_messages"] == 2
    assert message_ids(sid) == [] and api.get(path).status_code == 404


def test_a_user_id_with_a_slash_is_reachable(api: httpx.Client) -> None:
    add_message("slash-user-session", "user", "hi", user_id="org/alice")
    r = api.delete("/v1/users/" + quote("org/alice", safe=""))
    assert r.status_code == 200 and r.json()["deleted"]["chat_sessions"] == 1
    assert message_ids("slash-user-session") == []
