"""An agent's recall over HTTP: ``POST /v1/sessions/{id}/recall`` answers a cleared
output by its tool_use id or message id, or the passages a query matches, of that
session only; bad input gets an error naming it."""

from __future__ import annotations

import httpx
import pytest

from recap.db import transaction, utcnow
from recap.models import ArchivedMessage

pytestmark = pytest.mark.system

LOG = ("[tool result for toolu_h1: collected 40 items\nERROR LGR-3621 raised at:\n"
       "  src/ledger/loader.py:212\nteardown ok]")


def archived(api: httpx.Client, sid: str, msg_id: int, text: str) -> None:
    """A session with one archived tool result, as a fold or a clear leaves it."""
    r = api.post(f"/v1/sessions/{sid}/messages", json={"role": "user", "content": "Hello"})
    assert r.status_code == 201, r.text
    with transaction() as s:
        s.add(ArchivedMessage(id=msg_id, session_id=sid, role="user", token_count=20, run_id=1,
                              created_at=utcnow(), content=text,
                              tool_links=f"result:toolu_h{msg_id}"))


def _error(r: httpx.Response, status: int, type_: str) -> str:
    assert r.status_code == status, r.text
    assert r.json()["error"]["type"] == type_, r.text
    return str(r.json()["error"]["message"])


def test_recall_by_tool_use_id_message_id_or_query(api: httpx.Client) -> None:
    archived(api, "http-tool-a", 1, LOG)
    archived(api, "http-tool-b", 2, LOG.replace("LGR-3621", "LGR-9999"))
    r = api.post("/v1/sessions/http-tool-a/recall", json={"tool_use_id": "toolu_h1"})
    assert r.status_code == 200, r.text
    [got] = r.json()["recalled"]
    assert got["message_id"] == 1 and got["whole"] and got["channel"] == "tool result"
    assert got["text"] == LOG
    assert api.post("/v1/sessions/http-tool-a/recall",
                    json={"message_id": 1}).json()["recalled"] == [got]
    found = api.post("/v1/sessions/http-tool-a/recall", json={"query": "lgr3621 raised"})
    assert found.status_code == 200, found.text
    [passage] = found.json()["recalled"]
    assert "src/ledger/loader.py:212" in passage["text"]
    # Another session's text is never an answer: as if it did not exist.
    empty = api.post("/v1/sessions/http-tool-a/recall", json={"query": "LGR-9999"})
    assert empty.status_code == 200 and empty.json()["recalled"] == []
    assert "holds no message 2" in _error(api.post("/v1/sessions/http-tool-a/recall",
                                                   json={"message_id": 2}), 404, "not_found")
    _error(api.post("/v1/sessions/http-tool-a/recall", json={"tool_use_id": "toolu_h2"}),
           404, "not_found")
    _error(api.post("/v1/sessions/nobody/recall", json={"query": "LGR-3621"}), 404,
           "not_found")


@pytest.mark.parametrize(("body", "named"), [
    ({}, "message_id, tool_use_id or query"),
    ({"query": ""}, "query is empty"),
    ({"query": "a & !b | (c:*)"}, "names nothing"),
    ({"query": "x" * 5_000}, "at most 2000"),
    ({"message_id": 0}, "message_id"),
    ({"message_id": 1, "tool_use_id": "toolu_h1"}, "not both"),
    ({"tool_use_id": "a b"}, "tool_use_id"),
    ({"query": "LGR", "max_tokens": 0}, "max_tokens"),
    ({"query": "LGR", "colour": "red"}, "colour"),
])
def test_bad_input_is_422_naming_it(api: httpx.Client, body: dict[str, object],
                                    named: str) -> None:
    archived(api, "http-tool-bad", 3, LOG)
    assert named in _error(api.post("/v1/sessions/http-tool-bad/recall", json=body), 422,
                           "invalid_input")


def test_a_megabyte_query_is_refused_before_it_is_read(api: httpx.Client) -> None:
    r = api.post("/v1/sessions/http-tool-big/recall", json={"query": "x" * 1_000_000})
    _error(r, 413, "payload_too_large")
