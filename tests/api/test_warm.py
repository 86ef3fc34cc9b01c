"""``recap.warm_up`` (and ``await recap.aio.warm_up()``) load what the reply path
uses, so the first reply of a fresh process loads nothing more: checked in a
fresh interpreter (this test process has long imported everything), by the
modules a first reply adds. Timings are recap/bench/coldstart.py's, never asserted."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap

import pytest
from sqlalchemy import select

from recap import tenant
from recap.api.warm import PROBE_SESSION, warm_up
from recap.db import transaction
from recap.models import ChatMessage, ChatSession
from tests.api.test_import_cost import FORBIDDEN, forbidden
from tests.env import ROOT

# Around each script below: what a first reply publishes and loads. The first
# exchange queues a title job, so the first reply publishes.
HEAD = """
import json, sys
from celery.signals import after_task_publish

published = []
after_task_publish.connect(lambda sender=None, **_: published.append(sender), weak=False)
loaded = set(sys.modules)
"""
TAIL = """
print(json.dumps({"warm": warm, "reply": reply, "published": published}))
"""
SYNC = """
    import recap
    recap.warm_up()
    warm = sorted(set(sys.modules) - loaded)
    warmed, loaded = list(published), set(sys.modules)
    recap.add_message("warm-sync", "user", "Book the Lisbon hotel for March 14th.")
    recap.add_message("warm-sync", "assistant", "Done: March 14th.")
    recap.after_reply("warm-sync")
    recap.build_context("warm-sync", system_prompt="You help.")
    reply = sorted(set(sys.modules) - loaded)
    published = {"warm_up": warmed, "reply": published[len(warmed):]}
"""
ASYNC = """
    import asyncio
    from recap import aio

    async def main():
        global warm, warmed, loaded
        await aio.warm_up()
        warm = sorted(set(sys.modules) - loaded)
        warmed, loaded = list(published), set(sys.modules)
        await aio.add_message("warm-aio", "user", "Book the Lisbon hotel for March 14th.")
        await aio.add_message("warm-aio", "assistant", "Done: March 14th.")
        await aio.after_reply("warm-aio")
        await aio.build_context("warm-aio", system_prompt="You help.")
        await aio.close()

    asyncio.run(main())
    reply = sorted(set(sys.modules) - loaded)
    published = {"warm_up": warmed, "reply": published[len(warmed):]}
"""


def first_reply(code: str) -> dict[str, object]:
    """What a fresh interpreter loads in warm_up and then in its first reply."""
    script = HEAD + textwrap.dedent(code) + TAIL
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT,
                          env={**os.environ, "RECAP_TITLES_ENABLED": "true"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize("code", [SYNC, ASYNC], ids=["sync", "asyncio"])
def test_after_warm_up_the_first_reply_loads_nothing(code: str) -> None:
    found = first_reply(code)
    warmed = found["warm"]
    assert isinstance(warmed, list)
    # What it promises: settings, the engine and its driver, the tokenizer, the
    # reply path's modules, Celery's app with its transport and event machinery.
    assert {"recap.settings", "recap.db", "psycopg", "tiktoken", "recap.api.context",
            "recap.worker.celery_app", "recap.broker", "kombu.transport.redis",
            "celery.events.dispatcher", "celery.result"} <= set(warmed)
    # Never the SDK, the summarizer or the job pipeline; Celery's app itself loads
    # celery.worker's state, as every process that publishes a job does.
    assert forbidden([m for m in warmed if not m.startswith("celery.worker")]) == [], (
        f"warm_up loaded some of {FORBIDDEN}")
    assert found["reply"] == []  # the first add_message, after_reply, build_context
    assert found["published"] == {"warm_up": [],  # nothing published by the warm-up
                                  "reply": ["recap.tasks.generate_title"]}
    with transaction() as s:  # and nothing stored: its rehearsal was rolled back
        assert s.get(ChatSession, PROBE_SESSION) is None


def test_warm_up_stores_nothing_and_works_inside_a_tenants_scope() -> None:
    warm_up()
    with tenant("acme"):  # its rehearsal stays inside the scope's ids
        warm_up()
    with transaction() as s:
        assert s.scalars(select(ChatSession.id)).all() == []
        assert s.scalars(select(ChatMessage.id)).all() == []


@pytest.mark.usefixtures("broker_down")
def test_a_broker_that_cannot_be_reached_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="recap.warm"):
        warm_up()  # the reply path never fails for the broker: neither does its warm-up
    assert "the broker could not be reached" in caplog.text
