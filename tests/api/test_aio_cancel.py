"""A cancelled asyncio ``after_reply`` (a client gone, a request timeout) never leaves
a pending marker without its job: once the hook has decided, its publish happens
even if the caller is cancelled between the commit and the publish."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest

from recap.api import aio, loops
from recap.store import enqueue
from recap.store.enqueue import SUMMARIZE_TASK
from tests.helpers import LOW, seed, session_row, wait_for


def marker_set(session_id: str) -> None:
    def committed() -> bool:
        row = session_row(session_id)
        return row is not None and row.enqueued_at is not None

    wait_for(committed, what=f"the pending marker of {session_id}")


def test_cancelling_after_reply_between_commit_and_publish_still_publishes(
        settings_env: Callable[..., None], monkeypatch: pytest.MonkeyPatch,
        sent: list[tuple[str, str]]) -> None:
    settings_env(**LOW)
    busy = [f"busy-{i}" for i in range(loops.PUBLISH_THREADS)]
    for sid in [*busy, "victim"]:
        seed(sid, 11)
    # A slow broker holds every publish thread, so the victim's publish waits in
    # line after its commit: the window a cancellation used to fall into.
    held, release = threading.Semaphore(0), threading.Event()
    real_send = enqueue._send

    def slow_send(task_name: str, session_id: str, *, task_id: str | None) -> None:
        if session_id in busy:
            held.release()
            assert release.wait(60), "the test never released the broker"
        real_send(task_name, session_id, task_id=task_id)

    monkeypatch.setattr(enqueue, "_send", slow_send)

    async def scenario() -> None:
        hooks = [asyncio.create_task(aio.after_reply(sid)) for sid in busy]
        for _ in busy:
            assert await asyncio.to_thread(held.acquire, True, 60)
        victim = asyncio.create_task(aio.after_reply("victim"))
        await asyncio.to_thread(marker_set, "victim")  # committed, not yet published
        victim.cancel()
        with pytest.raises(asyncio.CancelledError):
            await victim
        release.set()
        assert await asyncio.gather(*hooks) == [True] * len(busy)
        await aio.close()  # waits for the publishes still running

    try:
        asyncio.run(scenario())
    finally:
        release.set()
    row = session_row("victim")
    assert row is not None and row.enqueued_at is not None  # the marker is set...
    assert (SUMMARIZE_TASK, "victim") in sent  # ...and its job was published
