"""store_turns / astore_turns: a batch in one transaction, each keyed message
stored once per session, even after a fold or a concurrent store."""

from __future__ import annotations

import asyncio
import threading

import pytest

from recap.api.turns import MAX_KEY, Turn, astore_turns, key_of, store_turns
from recap.errors import InvalidInput
from recap.sessions.forget import forget
from tests.helpers import message_ids
from tests.integrations.common import keys, stored_total


def test_a_keyed_turn_is_stored_once() -> None:
    first = store_turns("t1", [Turn("user", "hi", ("m1",)), Turn("assistant", "hello", ("m2",))])
    assert len(first.ids) == 2 and first.replied and first.skipped == 0
    again = store_turns("t1", [Turn("user", "hi", ("m1",)), Turn("assistant", "hello", ("m2",)),
                               Turn("user", "more", ("m3",))])
    assert len(again.ids) == 1 and again.skipped == 2 and not again.replied
    assert stored_total("t1") == 3


def test_an_unkeyed_turn_is_always_stored() -> None:
    store_turns("t2", [Turn("user", "yes")])
    store_turns("t2", [Turn("user", "yes")])
    assert stored_total("t2") == 2 and keys("t2") == 0


def test_a_bad_turn_writes_nothing_and_names_it() -> None:
    with pytest.raises(InvalidInput, match="turn 1 \\(robot\\)"):
        store_turns("t3", [Turn("user", "ok", ("k1",)), Turn("robot", "x", ("k2",))])
    assert message_ids("t3") == [] and keys("t3") == 0


def test_concurrent_stores_of_one_key_write_it_once() -> None:
    barrier = threading.Barrier(4)

    def store() -> None:
        barrier.wait()
        store_turns("t4", [Turn("user", "same step", ("step-1",))])

    threads = [threading.Thread(target=store) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert stored_total("t4") == 1


def test_async_store_shares_the_keys() -> None:
    async def run() -> tuple[int, int]:
        from recap.api import aio

        a = await astore_turns("t5", [Turn("user", "q", ("x",)), Turn("assistant", "a", ("y",))])
        b = await astore_turns("t5", [Turn("assistant", "a", ("y",))])
        await aio.close()
        return len(a.ids), b.skipped

    assert asyncio.run(run()) == (2, 1)
    assert store_turns("t5", [Turn("user", "q", ("x",))]).skipped == 1


def test_long_ids_are_stored_as_a_digest_and_forget_erases_keys() -> None:
    long = "k" * (MAX_KEY + 1)
    assert key_of(long).startswith("sha256:") and key_of("short") == "short"
    store_turns("t6", [Turn("user", "q", (long,))])
    assert store_turns("t6", [Turn("user", "q", (long,))]).skipped == 1
    assert forget(session_id="t6")["stored_keys"] == 1
    assert keys("t6") == 0
