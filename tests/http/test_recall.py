"""Recall over HTTP: ``POST /v1/sessions/{id}/context`` quotes the archived line a
new user turn names, after the last cache breakpoint (the server builds the
context with the same code as the library)."""

from __future__ import annotations

import re

import httpx
import pytest
from sqlalchemy import update

from recap.core.context.lookback import RECALL_OPEN
from recap.db import transaction, utcnow
from recap.models import ArchivedMessage, ChatSession

pytestmark = pytest.mark.system


def test_the_context_endpoint_recalls_an_archived_identifier(api: httpx.Client) -> None:
    sid = "http-recall"
    for role, text in (("user", "Hello"), ("assistant", "Hi, what shall we look at?")):
        r = api.post(f"/v1/sessions/{sid}/messages", json={"role": role, "content": text})
        assert r.status_code == 201, r.text
    with transaction() as s:  # as a fold leaves it: a summary, and the archive
        s.execute(update(ChatSession).where(ChatSession.id == sid).values(
            rolling_summary="The user debugged the ledger tests.", summary_tokens=8))
        s.add(ArchivedMessage(id=1, session_id=sid, role="tool", token_count=20, run_id=1,
                              created_at=utcnow(), content="ran 40 tests\nERROR LGR-3621 "
                              "raised at:\n  src/ledger/loader.py:212\nteardown ok"))
    r = api.post(f"/v1/sessions/{sid}/messages",
                 json={"role": "user", "content": "Where was LGR-3621 raised?"})
    assert r.status_code == 201, r.text
    r = api.post(f"/v1/sessions/{sid}/context", json={"system_prompt": "Be brief."})
    assert r.status_code == 200, r.text
    last = r.json()["messages"][-1]["content"]
    assert "cache_control" in last[-2] and last[-1]["text"].startswith(RECALL_OPEN)
    assert "[tool result · message 1 · " in last[-1]["text"]
    assert re.search(r"LGR-3621 raised at:\n +src/ledger/loader\.py:212", last[-1]["text"])
