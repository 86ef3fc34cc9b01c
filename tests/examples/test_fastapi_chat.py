"""examples/fastapi_chat.py as a client sees it: through httpx's ASGI transport,
against the fake Messages API (the SDK reads ANTHROPIC_BASE_URL), the test
database and an in-process Recap worker."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from examples import fastapi_chat
from recap.core.context.assemble import SUMMARY_OPEN, content_text, system_text
from recap.testing import FakeAnthropic, error
from tests.helpers import LOW, message_ids, statuses, wait_for


def post(*turns: tuple[str, str]) -> list[httpx.Response]:
    """POST each (session id, text) in order to a fresh app, inside its lifespan."""

    async def run() -> list[httpx.Response]:
        app = fastapi_chat.create_app()
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://chat") as http:
                return [await http.post(f"/chat/{sid}", json={"text": text})
                        for sid, text in turns]

    return asyncio.run(run())


def chat_requests(fake: FakeAnthropic) -> list[dict[str, Any]]:
    """The app's own calls to the Messages API (not the worker's summaries)."""
    return [r for r in fake.requests
            if system_text(r.get("system", "")).startswith(fastapi_chat.SYSTEM_PROMPT)]


@pytest.mark.usefixtures("celery_worker_thread")
def test_the_chat_endpoint_stores_replies_and_its_context_shrinks_once_summarized(
        settings_env: Callable[..., None], fake_api: FakeAnthropic) -> None:
    settings_env(**LOW)
    questions = [f"Question {i}: what should we see in Lisbon on day {i}? " + "detail " * 20
                 for i in range(6)]
    replies = post(*[("trip", q) for q in questions])
    assert [r.status_code for r in replies] == [200] * 6
    assert all(r.json()["reply"] for r in replies)
    # Every turn asked Claude with the whole stored conversation so far, ending
    # with the new question (the fake answers 400 to an invalid request).
    sent = chat_requests(fake_api)
    assert len(sent) == 6 and sent[0]["model"] == fastapi_chat.MODEL
    assert [content_text(m["content"]) for m in sent[0]["messages"]] == [questions[0]]
    assert content_text(sent[2]["messages"][-1]["content"]) == questions[2]
    assert [m["role"] for m in sent[2]["messages"]] == ["user", "assistant"] * 2 + ["user"]

    # The hook queued a summary: the worker condenses the session in the background.
    wait_for(lambda: "applied" in statuses("trip"), timeout=60, what="a summary applied")
    stored = len(message_ids("trip"))
    assert stored < 12
    (reply,) = post(("trip", "And what about day 7?"))
    assert reply.status_code == 200
    last = chat_requests(fake_api)[-1]
    assert SUMMARY_OPEN in system_text(last["system"])  # the summary stands in for old turns
    assert len(last["messages"]) <= stored + 2
    assert content_text(last["messages"][-1]["content"]).endswith("And what about day 7?")


def test_bad_input_is_a_422_naming_the_problem_and_stores_nothing(
        fake_api: FakeAnthropic) -> None:
    blank, nul = post(("trip", "   "), ("trip", "a\x00b"))
    assert blank.status_code == nul.status_code == 422
    assert "whitespace" in blank.json()["detail"] and "NUL" in nul.json()["detail"]
    assert message_ids("trip") == [] and fake_api.requests == []


def test_a_model_error_is_a_502_and_the_session_is_left_as_it_was(
        fake_api: FakeAnthropic) -> None:
    (first,) = post(("trip", "Hello?"))
    assert first.status_code == 200
    fake_api.always(error(400, "scripted refusal"))  # not retried by the SDK
    (reply,) = post(("trip", "And then?"))
    assert reply.status_code == 502 and reply.json()["detail"] == "the model is unavailable"
    assert len(message_ids("trip")) == 2  # the first exchange only: no orphaned user turn
    fake_api.always(None)
    (retry,) = post(("trip", "And then?"))
    assert retry.status_code == 200
    roles = [m["role"] for m in chat_requests(fake_api)[-1]["messages"]]
    assert roles == ["user", "assistant", "user"]  # alternating: the failed turn left nothing


def test_without_a_key_every_turn_is_a_503_with_the_reason_and_stores_nothing(
        fake_api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    (reply,) = post(("trip", "Hello?"))
    assert reply.status_code == 503
    assert reply.headers["content-type"] == "application/json"
    assert reply.json()["detail"] == fastapi_chat.NO_KEY
    assert "python -m recap.testing" in fastapi_chat.NO_KEY
    assert message_ids("trip") == [] and fake_api.requests == []
