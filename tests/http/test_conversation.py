"""A whole conversation through a real ``recap serve``: turns, the hook, a summary
condensed by the worker, the context built from it, history and rewind."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import select

import recap
from recap.api.context import build_context
from recap.db import transaction
from recap.models import ChatMessage
from tests.helpers import assert_invariants, sentence, wait_for

pytestmark = pytest.mark.system


def _session(api: httpx.Client, sid: str) -> dict[str, object]:
    r = api.get(f"/v1/sessions/{sid}")
    assert r.status_code == 200, r.text
    body: dict[str, object] = r.json()
    return body


def test_a_conversation_over_http_is_condensed_into_a_summary(
        api: httpx.Client, celery_worker_thread: object, low: None) -> None:
    sid = "http-conversation"
    written: list[int] = []
    queued = []
    for _turn in range(7):
        for role in ("user", "assistant"):
            r = api.post(f"/v1/sessions/{sid}/messages",
                         json={"role": role, "content": sentence(len(written), 40)})
            assert r.status_code == 201, r.text
            (stored,) = r.json()["messages"]
            assert stored["token_count"] > 0
            written.append(stored["id"])
        r = api.post(f"/v1/sessions/{sid}/replied")
        assert r.status_code == 202, r.text
        queued.append(r.json()["queued"])
    assert any(queued)  # the hook queued a job once the thresholds were crossed

    wait_for(lambda: _session(api, sid)["summary_version"] == 1, timeout=60,
             what="the first summary")
    session = _session(api, sid)
    summary = session["summary"]
    assert isinstance(summary, str) and summary
    assert session["summarized_message_count"] == 5  # one batch (RECAP_BATCH_SIZE)
    assert session["message_count"] == len(written) - 5
    # recap.session's view, field for field (the route returns that model), once the
    # title job and any follow-up have settled.
    assert set(session) == set(recap.SessionView.model_fields)
    wait_for(lambda: _session(api, sid) == recap.session(sid).model_dump(mode="json"),
             what="the HTTP answer to equal recap.session's")
    fold = session["last_fold"]
    assert isinstance(fold, dict) and (fold["outcome"], fold["messages"]) == ("applied", 5)
    # What the replies cost next to full history with caching (tests/api/test_spend.py):
    # seven replies, Recap's summarizing, the signed difference and its word.
    spend = session["spend"]
    assert isinstance(spend, dict) and spend["replies"] == 7
    assert spend["summarize_input_tokens"] > 0
    assert spend["saved_tokens"] == spend["full_cost_tokens"] - spend["recap_cost_tokens"]
    assert spend["verdict"] == ("loss" if spend["saved_tokens"] < 0 else
                                "saving" if spend["saved_tokens"] > 0 else "even")

    r = api.post(f"/v1/sessions/{sid}/context",
                 json={"system_prompt": "You are a helpful assistant.", "prompt_caching": False})
    assert r.status_code == 200, r.text
    ctx = r.json()
    assert summary in ctx["system"] and "You are a helpful assistant." in ctx["system"]
    # The window from message 6 on (an assistant turn: a placeholder user turn leads).
    assert [m["content"] for m in ctx["messages"][1:]] == [sentence(i, 40) for i in range(5, 14)]
    assert ctx["tokens"] <= ctx["budget"]
    assert set(ctx["request"]) == {"system", "messages"}  # add model and max_tokens, send
    # build_context's parts, as the Python call returns them (never in the request).
    assert ctx["parts"] == build_context(sid, system_prompt="")["parts"]
    assert ctx["parts"]["summary"] is True and ctx["parts"]["summary_version"] == 1

    r = api.get(f"/v1/sessions/{sid}/summaries/1")
    assert r.status_code == 200 and r.json()["text"] == summary
    assert r.json()["covers_through"] == written[4]

    r = api.patch(f"/v1/sessions/{sid}/messages/{written[-1]}", json={"content": "edited"})
    assert r.status_code == 200 and r.json()["message_id"] == written[-1]
    r = api.post(f"/v1/sessions/{sid}/rewind", json={"after_message_id": written[-3]})
    assert r.status_code == 200, r.text
    assert r.json()["deleted"] == 2
    assert _session(api, sid)["message_count"] == len(written) - 5 - 2
    assert_invariants({sid: written})


def test_a_batch_is_stored_in_order_and_settings_and_forget_work(api: httpx.Client) -> None:
    sid = "http-batch"
    r = api.post(f"/v1/sessions/{sid}/messages", json={"messages": [
        {"role": "user", "content": "Hello there", "user_id": "u-http"},
        {"role": "assistant", "content": [{"type": "text", "text": "Hi! How can I help?"}]},
        {"role": "user", "content": "Remember my flight is on March 14th", "pinned": True}]})
    assert r.status_code == 201, r.text
    answered = {m["id"]: m["token_count"] for m in r.json()["messages"]}
    assert list(answered) == sorted(answered) and len(answered) == 3
    r = api.post(f"/v1/sessions/{sid}/messages", json={"role": "assistant", "content": "Noted."})
    answered |= {m["id"]: m["token_count"] for m in r.json()["messages"]}
    with transaction() as s:  # the counts answered are the ones stored
        stored = {row.id: row.token_count for row in s.execute(
            select(ChatMessage.id, ChatMessage.token_count).where(ChatMessage.session_id == sid))}
    assert stored == answered and len(stored) == 4
    session = _session(api, sid)
    assert session["message_count"] == 4 and session["user_id"] == "u-http"
    assert session["job"] is None and session["summary"] is None

    r = api.put(f"/v1/sessions/{sid}/settings", json={"trigger_messages": 40})
    assert r.status_code == 200 and r.json()["overrides"] == {"trigger_messages": 40}
    assert _session(api, sid)["overrides"] == {"trigger_messages": 40}
    r = api.put(f"/v1/sessions/{sid}/settings", json={"trigger_mesages": 40})
    assert r.status_code == 422 and "trigger_mesages" in r.json()["error"]["message"]
    r = api.put(f"/v1/sessions/{sid}/settings", json={})
    assert r.status_code == 200 and r.json()["overrides"] is None

    r = api.delete("/v1/users/u-http")
    assert r.status_code == 200 and r.json()["deleted"]["chat_messages"] == 4
    assert api.get(f"/v1/sessions/{sid}").status_code == 404
    r = api.delete(f"/v1/sessions/{sid}")  # forgetting again changes nothing
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found"
