"""Helpers shared by the API test modules (no fixtures; those live in conftest.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from recap.api import aio, context, ingest
from recap.core.context.assemble import Context, content_text
from recap.core.context.request import as_request
from recap.testing import validate_messages_request

PROMPT = "You are a helpful travel assistant."


def assert_valid(ctx: Context, **extra: Any) -> None:
    body = {"model": "claude-test", "max_tokens": 64, **as_request(ctx, **extra)}
    assert validate_messages_request(body) is None, body
    msgs = body["messages"]
    assert all(a["role"] != b["role"] for a, b in zip(msgs, msgs[1:], strict=False))
    texts = [content_text(m["content"]) for m in msgs]
    assert all(t.strip() for t in texts)
    if msgs[-1]["role"] == "assistant":
        assert texts[-1] == texts[-1].rstrip()


class SyncApi:
    """The sync API, as the scenarios call it."""

    name = "sync"
    add_message = staticmethod(ingest.add_message)
    after_reply = staticmethod(ingest.after_reply)
    build_context = staticmethod(context.build_context)


class AsyncApi:
    """The asyncio API, every call awaited on one event loop kept for the whole
    test (like an app's loop): its engine and pooled connections carry over."""

    name = "async"

    def __init__(self, runner: asyncio.Runner) -> None:
        self.run = runner.run

    def add_message(self, *args: Any, **kwargs: Any) -> int:
        return self.run(aio.add_message(*args, **kwargs))

    def after_reply(self, *args: Any, **kwargs: Any) -> bool:
        return self.run(aio.after_reply(*args, **kwargs))

    def build_context(self, *args: Any, **kwargs: Any) -> aio.Context:
        return self.run(aio.build_context(*args, **kwargs))


Api = SyncApi | AsyncApi
