"""``Idempotency-Key`` on POST .../messages: a retry gets the first answer and stores
nothing; another body with the key is 422; a refused request does not use it up."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.helpers import message_ids
from tests.http.server import Server

pytestmark = pytest.mark.system

SID = "http-idem"
BODY: dict[str, object] = {"role": "user", "content": "Book the Lisbon hotel for March 14th"}


def _post(api: httpx.Client, key: str, body: Mapping[str, object], sid: str = SID
          ) -> httpx.Response:
    return api.post(f"/v1/sessions/{sid}/messages", json=body,
                    headers={"Idempotency-Key": key})


def test_a_retry_gets_the_first_answer_and_stores_nothing(api: httpx.Client) -> None:
    key = str(uuid.uuid4())
    first = _post(api, key, BODY)
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    again = _post(api, key, BODY)
    assert again.status_code == 201 and again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert message_ids(SID) == [first.json()["messages"][0]["id"]]
    # The same body without a key (or with another one) is a new message.
    assert _post(api, str(uuid.uuid4()), BODY).status_code == 201
    assert len(message_ids(SID)) == 2


def test_the_same_key_with_another_body_or_session_is_422(api: httpx.Client) -> None:
    key = str(uuid.uuid4())
    assert _post(api, key, BODY).status_code == 201
    for r in (_post(api, key, {**BODY, "content": "Book Porto instead"}),
              _post(api, key, {**BODY, "pinned": True}),
              _post(api, key, BODY, sid="http-idem-other")):
        assert r.status_code == 422, r.text
        assert r.json()["error"]["type"] == "idempotency_key_reused"
    assert len(message_ids(SID)) == 1 and message_ids("http-idem-other") == []


def test_a_refused_request_does_not_use_up_its_key(api: httpx.Client) -> None:
    key = str(uuid.uuid4())
    bad = {"messages": [BODY, {"role": "user", "content": ""}]}
    r = _post(api, key, bad)
    assert r.status_code == 422 and r.json()["error"]["type"] == "invalid_input"
    assert message_ids(SID) == []  # all or none: the good first message is not stored
    r = _post(api, key, {"messages": [BODY, {"role": "assistant", "content": "Done."}]})
    assert r.status_code == 201 and len(message_ids(SID)) == 2


def test_concurrent_retries_store_once(server: Server) -> None:
    key = str(uuid.uuid4())

    def send(_: int) -> httpx.Response:
        with server.client() as api:
            return _post(api, key, BODY)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, range(8)))
    assert {r.status_code for r in answers} == {201}
    assert len({r.text for r in answers}) == 1
    assert sum("Idempotent-Replayed" in r.headers for r in answers) == 7
    assert len(message_ids(SID)) == 1


def test_a_malformed_key_is_400(api: httpx.Client) -> None:
    for key in ("has space", "k" * 256):
        r = _post(api, key, BODY)
        assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_idempotency_key"
    assert message_ids(SID) == []
