"""Who may reach what: keys bound to a tenant see and change only its ids (others
answer exactly as unknown ones); Host (and Origin) rules against DNS rebinding,
with --no-auth and with keys; an erased session takes its Idempotency-Key answers
with it; HEAD answers like GET; DELETE of an unknown session or user is the 404
docs/openapi.json promises."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import recap
from recap.errors import SessionNotFound, UserNotFound
from tests.helpers import message_ids
from tests.http.conftest import SERVER_ENV
from tests.http.server import Server

pytestmark = pytest.mark.system

ADMIN, ACME, GLOBEX = "admin-key", "acme-key", "globex-key"
KEYS = (ADMIN, f"{ACME}:acme", f"{GLOBEX}:globex")
SAID = {"role": "user", "content": "My locker code is 4471"}


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(log_dir=Path(tmp_path_factory.mktemp("scoped")), env=SERVER_ENV,
                 keys=KEYS).start()
    try:
        yield srv
    finally:
        srv.stop()


def _client(server: Server, key: str, **headers: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=30,
                        headers={"Authorization": f"Bearer {key}", **headers})


def _error(r: httpx.Response, status: int, type_: str) -> str:
    assert r.status_code == status, r.text
    assert r.json()["error"]["type"] == type_, r.text
    message: str = r.json()["error"]["message"]
    return message


def test_a_tenants_key_reaches_only_its_ids(scoped: Server) -> None:
    with _client(scoped, ADMIN) as admin, _client(scoped, ACME) as acme:
        assert admin.post("/v1/sessions/globex%2Fs1/messages",
                          json={**SAID, "user_id": "globex/u1"}).status_code == 201
        assert acme.post("/v1/sessions/acme%2Fs1/messages",
                         json={**SAID, "user_id": "acme/u1"}).status_code == 201
        assert acme.get("/v1/sessions/acme%2Fs1").status_code == 200
        # Another tenant's session answers exactly as one that was never stored.
        for sid in ("globex%2Fs1", "globex%2Fnever", "plain"):
            for method, path, body in (
                    ("GET", f"/v1/sessions/{sid}", None),
                    ("GET", f"/v1/sessions/{sid}/memories", None),
                    ("GET", f"/v1/sessions/{sid}/summaries/1", None),
                    ("POST", f"/v1/sessions/{sid}/context", {"system_prompt": ""}),
                    ("POST", f"/v1/sessions/{sid}/recall", {"query": "locker 4471"}),
                    ("POST", f"/v1/sessions/{sid}/messages", SAID),
                    ("POST", f"/v1/sessions/{sid}/rewind", {"after_message_id": 0}),
                    ("PATCH", f"/v1/sessions/{sid}/messages/1", {"content": "x"}),
                    ("PUT", f"/v1/sessions/{sid}/settings", {"keep_recent": 4}),
                    ("DELETE", f"/v1/sessions/{sid}/memories?source=tool", None),
                    ("DELETE", f"/v1/sessions/{sid}", None)):
                r = acme.request(method, path, json=body)
                message = _error(r, 404, "not_found")
                assert message == f"no chat session with id {sid.replace('%2F', '/')!r}"
        for uid in ("globex%2Fu1", "globex%2Fnobody"):
            assert _error(acme.delete(f"/v1/users/{uid}"), 404, "not_found") == \
                f"no user with id {uid.replace('%2F', '/')!r}"
            _error(acme.delete(f"/v1/users/{uid}/memories?source=tool"), 404, "not_found")
        # Nor can it bind one of its sessions to another tenant's user.
        r = acme.post("/v1/sessions/acme%2Fs2/messages", json={**SAID, "user_id": "globex/u1"})
        _error(r, 404, "not_found")
        assert message_ids("acme/s2") == []
        assert len(message_ids("globex/s1")) == 1  # untouched by all of the above
        _error(acme.get("/metrics"), 403, "forbidden")
        assert admin.get("/metrics").status_code == 200
        # The unscoped key keeps reaching every id.
        assert admin.get("/v1/sessions/acme%2Fs1").status_code == 200
        assert admin.delete("/v1/users/globex%2Fu1").status_code == 200
        assert message_ids("globex/s1") == []


def test_a_tenants_idempotency_keys_are_its_own(scoped: Server) -> None:
    key = str(uuid.uuid4())
    with _client(scoped, ACME) as acme, _client(scoped, GLOBEX) as globex:
        headers = {"Idempotency-Key": key}
        assert acme.post("/v1/sessions/acme%2Fidem/messages", json=SAID,
                         headers=headers).status_code == 201
        r = globex.post("/v1/sessions/globex%2Fidem/messages", json=SAID, headers=headers)
        assert r.status_code == 201 and "Idempotent-Replayed" not in r.headers


def test_a_retry_after_delete_stores_again(api: httpx.Client) -> None:
    sid, headers = "idem-erased", {"Idempotency-Key": str(uuid.uuid4())}
    first = api.post(f"/v1/sessions/{sid}/messages", json=SAID, headers=headers)
    assert first.status_code == 201
    r = api.delete(f"/v1/sessions/{sid}")
    assert r.status_code == 200 and r.json()["deleted"]["idempotency_keys"] == 1
    again = api.post(f"/v1/sessions/{sid}/messages", json=SAID, headers=headers)
    assert again.status_code == 201 and "Idempotent-Replayed" not in again.headers
    assert message_ids(sid) == [again.json()["messages"][0]["id"]]
    assert again.json()["messages"][0]["id"] != first.json()["messages"][0]["id"]


def test_delete_of_an_unknown_session_or_user_is_404(api: httpx.Client) -> None:
    spec = api.get("/openapi.json").json()["paths"]
    for path in ("/v1/sessions/{session_id}", "/v1/users/{user_id}"):
        assert "404" in spec[path]["delete"]["responses"]
    assert _error(api.delete("/v1/sessions/never-stored"), 404, "not_found") == \
        "no chat session with id 'never-stored'"
    _error(api.delete("/v1/users/never-stored"), 404, "not_found")
    assert api.post("/v1/sessions/gone-twice/messages", json=SAID).status_code == 201
    assert api.delete("/v1/sessions/gone-twice").status_code == 200
    _error(api.delete("/v1/sessions/gone-twice"), 404, "not_found")  # nothing left to erase


def test_head_answers_like_get_without_a_body(api: httpx.Client) -> None:
    assert api.post("/v1/sessions/head-1/messages", json=SAID).status_code == 201
    for path in ("/v1/sessions/head-1", "/v1/sessions/head-1/memories", "/v1/sessions/nobody",
                 "/healthz", "/readyz", "/metrics"):
        got, head = api.get(path), api.head(path)
        assert head.status_code == got.status_code, path
        assert head.content == b""
        assert head.headers["content-type"] == got.headers["content-type"]
        if path != "/metrics":  # the metrics move between the two requests
            assert head.headers["content-length"] == got.headers["content-length"]


def test_the_python_api_takes_the_same_tenant() -> None:
    recap.add_message("globex/py", "user", "hi", user_id="globex/py-user")
    with recap.tenant("acme"):
        recap.add_message("acme/py", "user", "hi", user_id="acme/py-user")
        with pytest.raises(SessionNotFound, match="no chat session with id 'globex/py'"):
            recap.build_context("globex/py", system_prompt="")
        with pytest.raises(SessionNotFound):
            recap.forget(session_id="globex/py")
        with pytest.raises(UserNotFound):
            recap.forget(user_id="globex/py-user")
        with pytest.raises(UserNotFound):
            recap.add_message("acme/py", "user", "hi", user_id="globex/py-user")
        with pytest.raises(recap.errors.InvalidInput, match="already scoped"):
            with recap.tenant(None):
                pass
    assert message_ids("globex/py") and len(message_ids("acme/py")) == 1


@pytest.fixture(scope="module")
def no_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(log_dir=Path(tmp_path_factory.mktemp("noauth")), env=SERVER_ENV,
                 args=["--no-auth"], keys=()).start()
    try:
        yield srv
    finally:
        srv.stop()


def test_no_auth_answers_loopback_host_names_only(no_auth: Server) -> None:
    port = no_auth.port
    with httpx.Client(base_url=no_auth.url, timeout=30) as anon:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", f"[::1]:{port}",
                     f"app.localhost:{port}"):
            assert anon.get("/v1/sessions/nobody", headers={"Host": host}).status_code == 404
        for host in (f"attacker.example:{port}", "127.0.0.1.nip.io", "", "localhost.evil"):
            r = anon.get("/v1/sessions/nobody", headers={"Host": host})
            _error(r, 400, "invalid_host")
            r = anon.delete("/v1/users/someone", headers={"Host": host})
            _error(r, 400, "invalid_host")
        for origin in ("http://attacker.example", "null", "https://localhost.evil:8000"):
            r = anon.delete("/v1/users/someone", headers={"Origin": origin})
            _error(r, 403, "forbidden_origin")
        r = anon.get("/v1/sessions/nobody", headers={"Origin": f"http://localhost:{port}"})
        assert r.status_code == 404
        # Probes that know the server by another name still see it is up.
        assert anon.get("/healthz", headers={"Host": "10.0.0.7"}).status_code == 200


def test_keys_with_a_host_allow_list(tmp_path: Path) -> None:
    srv = Server(log_dir=tmp_path, env=SERVER_ENV, keys=(ADMIN,),
                 args=["--allowed-hosts", "api.example.com,*.recap.internal"]).start()
    try:
        with _client(srv, ADMIN) as api:
            for host in ("api.example.com", "API.example.com:443", "eu.recap.internal"):
                r = api.get("/v1/sessions/nobody", headers={"Host": host})
                assert r.status_code == 404, host
            for host in ("127.0.0.1", "recap.internal", "api.example.com.evil"):
                _error(api.get("/v1/sessions/nobody", headers={"Host": host}), 400,
                       "invalid_host")
    finally:
        srv.stop()
