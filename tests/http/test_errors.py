"""Every status the API answers, each as ``{"error": {"type", "message"}}``: keys on
every route, 400, 404, 405, 409 under a held lease, 413, 415, 422 (nothing stored), 503."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from recap.testing.server import FakeAnthropic
from tests.env import PG_ADMIN
from tests.helpers import LOW, message_ids, sentence, wait_for
from tests.http.conftest import MAX_BODY, SERVER_ENV
from tests.http.server import Server

pytestmark = pytest.mark.system

SID = "http-errors"


def _error(r: httpx.Response, status: int, type_: str) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}
    assert body["error"]["type"] == type_, body
    assert "Traceback" not in r.text
    # One serialisation for every layer that answers (the guard, the protocol, FastAPI).
    assert r.headers["content-type"] == "application/json"
    assert r.content == json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    message: str = body["error"]["message"]
    return message


def _routes(server: Server) -> list[tuple[str, str]]:
    with server.client() as api:
        paths = api.get("/openapi.json").json()["paths"]
    for path, ops in paths.items():  # the schema says which routes need a key
        for op in ops.values():
            assert ("401" in op["responses"]) == (path != "/healthz"), path
    return [(method.upper(), re.sub(r"\{[^}]+\}", "1", path))
            for path, ops in paths.items() for method in ops]


def test_every_route_but_healthz_needs_a_key(server: Server) -> None:
    routes = _routes(server)
    assert len(routes) == 18  # plus /openapi.json, checked below
    for key in ("", "wrong-key", server.keys[0] + "x"):
        with server.client(key) as anon:
            for method, path in routes:
                r = anon.request(method, path, json={})
                if path == "/healthz":
                    assert r.status_code == 200
                    continue
                _error(r, 401, "unauthorized")
                assert r.headers["WWW-Authenticate"].startswith("Bearer")
            _error(anon.get("/openapi.json"), 401, "unauthorized")
    with server.client(server.keys[1]) as rotated:  # either key of RECAP_API_KEYS works
        assert rotated.get("/v1/sessions/nobody").status_code == 404
    with httpx.Client(base_url=server.url) as raw:
        r = raw.get("/v1/sessions/nobody", headers={"Authorization": f"Basic {server.keys[0]}"})
        _error(r, 401, "unauthorized")


def test_400_404_405(api: httpx.Client) -> None:
    r = api.post(f"/v1/sessions/{SID}/messages", content=b'{"role": "user", "content": ',
                 headers={"Content-Type": "application/json"})
    _error(r, 400, "invalid_json")
    assert "nobody" in _error(api.get("/v1/sessions/nobody"), 404, "not_found")
    _error(api.post("/v1/sessions/nobody/context", json={"system_prompt": ""}), 404,
           "not_found")
    _error(api.get("/v1/sessions/nobody/summaries/1"), 404, "not_found")
    _error(api.get("/v1/nothing-here"), 404, "not_found")
    _error(api.delete(f"/v1/sessions/{SID}/messages"), 405, "method_not_allowed")
    assert message_ids(SID) == []


def _raw(server: Server, request: bytes) -> tuple[bytes, bytes]:
    """Head and body of the answer to ``request`` sent as is (no client checks it)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


def test_an_id_too_long_to_read_is_a_json_400(server: Server) -> None:
    with server.client() as api:  # within the HTTP parser's limit: the id's own check
        r = api.get(f"/v1/sessions/{'a' * 12_000}")
    assert "at most 255" in _error(r, 422, "invalid_input")
    # Past the parser's limit the request never reaches the app: the server itself
    # answers, with the same body as every other error.
    head, body = _raw(server, f"GET /v1/sessions/{'a' * 200_000} HTTP/1.1\r\n"
                              f"Host: 127.0.0.1\r\nAuthorization: Bearer {server.keys[0]}"
                              f"\r\n\r\n".encode())
    assert head.startswith(b"HTTP/1.1 400 ") and b"connection: close" in head.lower()
    assert b"content-type: application/json" in head.lower()
    error = json.loads(body)
    assert error["error"]["type"] == "bad_request"
    assert "could not be read" in error["error"]["message"]
    assert body == json.dumps(error, separators=(",", ":")).encode()


def test_bytes_that_are_not_http_get_a_json_400(server: Server) -> None:
    head, body = _raw(server, b"NOT HTTP AT ALL\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"content-type: application/json" in head.lower()
    assert json.loads(body)["error"]["type"] == "bad_request"


def test_replied_on_an_unknown_session_is_404(api: httpx.Client) -> None:
    # The Python hook answers False here (it never fails); the route says why.
    assert "nobody" in _error(api.post("/v1/sessions/nobody/replied"), 404, "not_found")
    api.post(f"/v1/sessions/{SID}-replied/messages", json={"role": "user", "content": "hi"})
    r = api.post(f"/v1/sessions/{SID}-replied/replied")
    assert r.status_code == 202 and r.json() == {"queued": False, "title_queued": False}


@pytest.mark.parametrize(("body", "named"), [
    ({"content": "no role"}, "role"),
    ({"role": "robot", "content": "hi"}, "role"),
    ({"role": "user"}, "content"),
    ({"role": "user", "content": "hi", "pinned": "yes"}, "pinned"),
    ({"role": "user", "content": "hi", "colour": "red"}, "colour"),
    ({"role": "user", "content": [{"type": "text"}]}, "text"),
    ({"role": "user", "content": "hi", "messages": [{"role": "user", "content": "x"}]},
     "messages"),
    ({"messages": [{"role": "user", "content": "fine"}, {"role": "user", "content": 7}]},
     "content"),
    ({"messages": []}, "messages"),
])
def test_422_names_the_field_and_stores_nothing(api: httpx.Client, body: dict[str, object],
                                                named: str) -> None:
    message = _error(api.post(f"/v1/sessions/{SID}/messages", json=body), 422, "invalid_input")
    assert named in message
    assert message_ids(SID) == []


def test_422_elsewhere(api: httpx.Client) -> None:
    api.post(f"/v1/sessions/{SID}/messages", json={"role": "user", "content": "hi"})
    _error(api.post(f"/v1/sessions/{SID}/context", json={}), 422, "invalid_input")
    _error(api.post(f"/v1/sessions/{SID}/rewind", json={"after_message_id": -1}), 422,
           "invalid_input")
    _error(api.post(f"/v1/sessions/{SID}/rewind", json={"after_message_id": 10**9}), 422,
           "invalid_input")
    _error(api.get(f"/v1/sessions/{SID}/summaries/x"), 422, "invalid_input")
    _error(api.get(f"/v1/sessions/{SID}/summaries/3"), 422, "invalid_input")
    _error(api.patch(f"/v1/sessions/{SID}/messages/{10**9}", json={"content": "x"}), 422,
           "invalid_input")
    _error(api.put(f"/v1/sessions/{SID}/settings", json={"batch_size": 0}), 422,
           "invalid_input")
    _error(api.post(f"/v1/sessions/{'x' * 300}/messages", json={"role": "user", "content": "x"}),
           422, "invalid_input")
    assert len(message_ids(SID)) == 1


def test_413_before_parsing_declared_or_streamed(api: httpx.Client) -> None:
    big = {"role": "user", "content": "x" * MAX_BODY}
    assert "RECAP_API_MAX_BODY_BYTES" in _error(
        api.post(f"/v1/sessions/{SID}/messages", json=big), 413, "payload_too_large")

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams in
        yield b'{"role": "user", "content": "'
        for _ in range(MAX_BODY // 1024 + 1):
            yield b"y" * 1024
        yield b'"}'

    r = api.post(f"/v1/sessions/{SID}/messages", content=chunks(),
                 headers={"Content-Type": "application/json"})
    _error(r, 413, "payload_too_large")
    assert message_ids(SID) == []


def test_409_with_retry_after_while_a_job_holds_the_session(
        api: httpx.Client, fake_api: FakeAnthropic, celery_worker_thread: object,
        settings_env: Callable[..., None]) -> None:
    # The held call outlasts the two refused requests (each waits WAIT_S for the lease).
    settings_env(**LOW, RECAP_LLM_TIMEOUT_S=15)
    sid = "http-busy"
    ids = [m["id"] for m in api.post(f"/v1/sessions/{sid}/messages", json={"messages": [
        {"role": "user" if i % 2 == 0 else "assistant", "content": sentence(i, 40)}
        for i in range(14)]}).json()["messages"]]
    gate = fake_api.hold()
    assert api.post(f"/v1/sessions/{sid}/replied").json()["queued"] is True
    gate.wait_entered()  # the job holds the lease, its model call held
    r = api.post(f"/v1/sessions/{sid}/rewind", json={"after_message_id": ids[10]})
    assert "retry" in _error(r, 409, "session_busy")
    assert int(r.headers["Retry-After"]) > 0
    _error(api.patch(f"/v1/sessions/{sid}/messages/{ids[12]}", json={"content": "e"}), 409,
           "session_busy")
    assert api.get(f"/v1/sessions/{sid}").json()["job"] == "running"
    gate.release()
    wait_for(lambda: api.get(f"/v1/sessions/{sid}").json()["summary_version"] == 1,
             what="the held job to apply")
    r = api.post(f"/v1/sessions/{sid}/rewind", json={"after_message_id": ids[10]})
    assert r.status_code == 200, r.text
    assert message_ids(sid) == ids[5:11]


def test_ready_and_metrics(api: httpx.Client) -> None:
    r = api.get("/readyz")
    assert r.status_code == 200 and r.json() == {"ready": True, "problems": []}
    r = api.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert "recap_up 1.0" in r.text and "recap_sessions " in r.text


@pytest.fixture(scope="module")
def down(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server whose database and broker are both unreachable."""
    srv = Server(log_dir=Path(tmp_path_factory.mktemp("down")), env={
        **SERVER_ENV, "DATABASE_URL": "postgresql+psycopg://postgres@127.0.0.1:1/recap",
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0"}).start()
    try:
        yield srv
    finally:
        srv.stop()


def test_503_when_the_database_is_down_but_the_hook_never_fails(down: Server) -> None:
    with down.client() as api:
        r = api.post(f"/v1/sessions/{SID}/messages", json={"role": "user", "content": "hi"})
        assert "database" in _error(r, 503, "database_unavailable")
        assert int(r.headers["Retry-After"]) > 0
        _error(api.get(f"/v1/sessions/{SID}"), 503, "database_unavailable")
        r = api.post(f"/v1/sessions/{SID}/replied")  # like the Python hook: the sweeper catches up
        assert r.status_code == 202 and r.json() == {"queued": False, "title_queued": False}
        r = api.get("/readyz")
        assert r.status_code == 503 and r.json()["ready"] is False
        problems = r.json()["problems"]
        assert len(problems) == 2
        assert " is unreachable (" in problems[0] and "recap db upgrade" in problems[0]
        assert problems[1].startswith("broker unreachable")
        assert api.get("/metrics").text.count("recap_up 0.0") == 1


def test_readyz_names_a_database_behind_the_migrations(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    # The admin database has no Recap tables: only read here, never written.
    srv = Server(log_dir=Path(tmp_path_factory.mktemp("unmigrated")),
                 env={**SERVER_ENV, "DATABASE_URL": PG_ADMIN}).start()
    try:
        with srv.client() as api:
            r = api.get("/readyz")
        assert r.status_code == 503
        (problem,) = r.json()["problems"]
        assert "never migrated" in problem and "recap db upgrade" in problem
    finally:
        srv.stop()


def test_the_log_holds_no_message_text_and_no_key(server: Server, api: httpx.Client) -> None:
    secret = "my-secret-diagnosis-7f3a"
    api.post(f"/v1/sessions/{SID}/messages", json={"role": "user", "content": secret})
    api.post(f"/v1/sessions/{SID}/messages", json={"role": "robot", "content": secret})
    api.post(f"/v1/sessions/{SID}/context", json={"system_prompt": secret})
    log = server.logged()
    assert f"POST /v1/sessions/{SID}/messages" in log  # the access log is on
    assert secret not in log
    assert all(key not in log for key in server.keys)


def test_415_names_the_missing_or_wrong_content_type(api: httpx.Client) -> None:
    body = b'{"role": "user", "content": "hi"}'
    messages = f"/v1/sessions/{SID}/messages"
    missing = _error(api.post(messages, content=body), 415, "unsupported_media_type")
    assert "Content-Type: application/json" in missing
    assert "no Content-Type header" in missing
    wrong = _error(api.post(messages, content=body, headers={"Content-Type": "text/plain"}),
                   415, "unsupported_media_type")
    assert "Content-Type: application/json" in wrong and "'text/plain'" in wrong
    # curl -d without -H sends a form: named too, on every route that takes a body.
    form = _error(api.post(f"/v1/sessions/{SID}/context", data={"system_prompt": "x"}), 415,
                  "unsupported_media_type")
    assert "'application/x-www-form-urlencoded'" in form
    _error(api.put(f"/v1/sessions/{SID}/settings", content=b'{"batch_size": 10}',
                   headers={"Content-Type": "text/plain"}), 415, "unsupported_media_type")
    assert message_ids(SID) == []
    # JSON with parameters is JSON, on the reply path's fast route and on FastAPI's.
    r = api.post(messages, content=body,
                 headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status_code == 201, r.text
    r = api.put(f"/v1/sessions/{SID}/settings", content=b'{"batch_size": 10}',
                headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status_code == 200, r.text
