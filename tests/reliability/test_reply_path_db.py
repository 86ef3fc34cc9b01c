"""The reply path against a PostgreSQL that drops connections: pooled connections
the server ended (pg_terminate_backend, as a restart does) are replaced at
checkout, without a ``SELECT 1`` round trip per call (recap.engines.closed_by_server)."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from recap.api.ingest import add_message, after_reply
from recap.db import get_engine, transaction
from recap.engines import closed_by_server
from tests.helpers import message_ids, session_row, wait_for

pytestmark = pytest.mark.system


def _kill_all_pooled() -> None:
    """End every backend of this database from outside the pool, then wait until the
    pooled connections' sockets show it (the server's goodbye arrives asynchronously)."""
    engine = get_engine()
    held = [engine.raw_connection() for _ in range(2)]  # the pool holds at least two
    raws = [h.dbapi_connection for h in held]
    for h in held:
        h.close()
    outsider = create_engine(engine.url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with outsider.connect() as conn:
            killed = conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                       "WHERE datname = :db"), {"db": engine.url.database}).all()
    finally:
        outsider.dispose()
    assert len(killed) >= 2
    wait_for(lambda: all(closed_by_server(r) for r in raws), timeout=10,
             what="the server to close the pooled connections")


@pytest.mark.parametrize("rounds", [1, 3])
def test_add_message_and_the_hook_survive_terminated_connections(rounds: int) -> None:
    ids = [add_message("drop", "user", "hello")]
    for i in range(rounds):
        _kill_all_pooled()
        ids.append(add_message("drop", "assistant", f"reply {i}"))
        after_reply("drop")  # never raises; it must not even log a failure here
        with transaction() as s:  # and a job's transaction gets a live connection too
            assert s.execute(text("SELECT 1")).scalar_one() == 1
    assert message_ids("drop") == ids
    row = session_row("drop")
    assert row is not None and row.message_count == len(ids)


def test_a_live_idle_connection_is_not_mistaken_for_a_closed_one() -> None:
    add_message("live", "user", "hello")
    raw = get_engine().raw_connection()
    try:
        assert not closed_by_server(raw.dbapi_connection)
    finally:
        raw.close()
