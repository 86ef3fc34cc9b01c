"""The reply path's pure ASGI layer (recap.http.fast) answers exactly as FastAPI's
routes do: the same status, headers and body for a good request and for each
kind of bad one (those it hands to FastAPI itself)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from recap.http.app import build_api
from recap.http.fast import ReplyPath

pytestmark = pytest.mark.system

JSON = {"Content-Type": "application/json"}
SAID = b'{"role": "user", "content": "Book the Lisbon hotel for March 14th"}'

# (method, path, body, headers): bad requests of every kind, then good ones.
CASES: list[tuple[str, str, bytes, dict[str, str]]] = [
    ("POST", "/v1/sessions/{sid}/messages", b'{"role": "user", "content": ', JSON),
    ("POST", "/v1/sessions/{sid}/messages", b'{"role": "user", "colour": "red"}', JSON),
    ("POST", "/v1/sessions/{sid}/messages", b'{"role": "robot", "content": "hi"}', JSON),
    ("POST", "/v1/sessions/{sid}/messages", b'{"messages": []}', JSON),
    ("POST", "/v1/sessions/{sid}/messages", b"", JSON),
    ("POST", "/v1/sessions/{sid}/messages", b"null", JSON),
    ("POST", "/v1/sessions/{sid}/messages", SAID, {"Content-Type": "text/plain"}),
    ("POST", "/v1/sessions/{sid}/messages", SAID, {}),
    ("POST", "/v1/sessions/{sid}/messages", SAID, {**JSON, "Idempotency-Key": "has space"}),
    ("POST", "/v1/sessions/" + "x" * 300 + "/messages", SAID, JSON),
    ("POST", "/v1/sessions/nobody/context", b'{"system_prompt": ""}', JSON),
    ("POST", "/v1/sessions/{sid}/context", b"{}", JSON),
    ("POST", "/v1/sessions/" + "x" * 300 + "/replied", b"", {}),
    ("POST", "/v1/sessions/nobody/replied", b"", {}),
    ("DELETE", "/v1/sessions/{sid}/messages", b"", {}),
    ("POST", "/v1/sessions/{sid}/messages/", SAID, JSON),
    ("POST", "/v1/sessions/{sid}/messages", SAID, {"Content-Type": "application/json; "
                                                                   "charset=utf-8"}),
    ("POST", "/v1/sessions/{sid}/messages", SAID, {**JSON, "Idempotency-Key": "k-1"}),
    ("POST", "/v1/sessions/{sid}/messages", SAID, {**JSON, "Idempotency-Key": "k-1"}),
    ("POST", "/v1/sessions/{sid}/replied", b"", {}),
    ("POST", "/v1/sessions/{sid}/context", b'{"system_prompt": "Be brief."}', JSON),
    ("POST", "/v1/sessions/{sid}/context", b'{"system_prompt": "", "prompt_caching": true}',
     JSON),
]


async def _answers(app: Any, sid: str) -> list[tuple[int, dict[str, str], bytes]]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        out = []
        for method, path, body, headers in CASES:
            key = headers.get("Idempotency-Key")
            if key:  # one key per app: the second app's first request is not a retry
                headers = {**headers, "Idempotency-Key": f"{key}-{sid}"}
            r = await client.request(method, path.format(sid=sid), content=body,
                                     headers=headers)
            out.append((r.status_code, _same(dict(r.headers), sid), _body(r, sid)))
        return out


def _same(headers: dict[str, str], sid: str) -> dict[str, str]:
    return {k: v.replace(sid, "S") for k, v in headers.items()}


def _body(r: httpx.Response, sid: str) -> bytes:
    """The body, the session id and the stored messages' ids (each app stores its own
    rows) left out."""
    if r.status_code != 201:
        return r.content.replace(sid.encode(), b"S")
    stored = r.json()
    assert stored.pop("session_id") == sid
    return json.dumps([m["token_count"] for m in stored.pop("messages")] + [stored]).encode()


@pytest.mark.usefixtures("database")
def test_the_layer_answers_as_fastapi_does() -> None:
    api = build_api()
    passed_on: list[str] = []

    async def recorded(scope: Any, receive: Any, send: Any) -> None:
        passed_on.append(scope["path"])
        await api(scope, receive, send)

    by_fastapi = asyncio.run(_answers(build_api(), "layer-a"))
    by_layer = asyncio.run(_answers(ReplyPath(recorded), "layer-b"))
    for case, fastapi, layer in zip(CASES, by_fastapi, by_layer, strict=True):
        assert layer == fastapi, case
    statuses = [status for status, _, _ in by_layer]
    # A body sent as text/plain or with no Content-Type: 415, naming the header.
    assert statuses[:16] == [400, 422, 422, 422, 422, 422, 415, 415, 400, 422, 404, 422,
                             422, 404, 405, 307]
    assert b"Content-Type: application/json" in by_layer[6][2] and b"text/plain" in \
        by_layer[6][2]
    assert statuses[16:] == [201, 201, 201, 202, 200, 200]
    # FastAPI saw the requests its own machinery refuses (the body, the method, the
    # path); the layer served the good ones and those the calls refuse (a role, an
    # empty batch, a key, a session id, an unknown session).
    assert len(passed_on) == 9
