"""The test run's claim of a Redis database (tests/env.py): it takes only an empty
database, or one a killed run left with nothing but a test run's keys; it never
flushes a database holding anyone else's keys, even when a dead run's claim is
there too; at the end it deletes only its own keys. One variable pins it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.env import (
    CLAIMED,
    OWNER_KEY,
    REDIS_SERVER,
    ROOT,
    claim_redis_db,
    claim_services,
    release_redis_db,
)

DEAD = "deadbeef:999999999"  # no such process
ME = f"scratch:{os.getpid()}"  # a live claim: no other run takes the database


@pytest.fixture
def scratch() -> Iterator[redis.Redis]:
    """A database of this test's own (claimed as a run claims one), emptied after.
    Each test writes its other keys before it drops or replaces the claim, so no
    other run takes the database meanwhile."""
    db = claim_redis_db(pin="", owner=ME)
    client = redis.Redis.from_url(f"{REDIS_SERVER}/{db}")
    yield client
    client.flushdb()  # only this test wrote here
    client.close()


def db_of(client: redis.Redis) -> str:
    return str(client.connection_pool.connection_kwargs["db"])


def test_a_dead_runs_database_with_a_key_of_someone_else_is_never_flushed_nor_claimed(
        scratch: redis.Redis) -> None:
    scratch.set("someone-else:cache", "theirs")
    scratch.set(OWNER_KEY, DEAD)
    with pytest.raises(RuntimeError, match="RECAP_TEST_REDIS_DB"):
        claim_redis_db(pin=db_of(scratch), owner="run:1")
    assert scratch.get("someone-else:cache") == b"theirs"
    assert scratch.get(OWNER_KEY) == DEAD.encode()


def test_a_database_held_by_another_process_is_never_touched(scratch: redis.Redis) -> None:
    scratch.set("another-app:queue", "x")
    scratch.delete(OWNER_KEY)
    with pytest.raises(RuntimeError, match="is not empty"):
        claim_redis_db(pin=db_of(scratch), owner="run:1")
    assert scratch.keys() == [b"another-app:queue"]


def test_a_killed_runs_database_holding_only_its_keys_is_reclaimed(scratch: redis.Redis) -> None:
    scratch.lpush("recap-test-deadbeef", "job")
    scratch.sadd("_kombu.binding.recap-test-deadbeef", "route")
    scratch.set(OWNER_KEY, DEAD)
    assert claim_redis_db(pin=db_of(scratch), owner=ME) == int(db_of(scratch))
    assert scratch.keys() == [OWNER_KEY.encode()]
    assert scratch.get(OWNER_KEY) == ME.encode()


def test_release_deletes_the_runs_keys_and_leaves_anyone_elses(scratch: redis.Redis) -> None:
    scratch.lpush("recap-test-run1", "job")
    scratch.hset("unacked", "tag", "msg")
    scratch.set("written-by-someone-else", "keep me")
    release_redis_db(int(db_of(scratch)), owner=ME)
    assert scratch.keys() == [b"written-by-someone-else"]


def test_release_of_a_database_no_longer_ours_deletes_nothing(scratch: redis.Redis) -> None:
    scratch.lpush("recap-test-other", "job")
    scratch.set(OWNER_KEY, "other:2")
    release_redis_db(int(db_of(scratch)), owner=ME)
    assert set(scratch.keys()) == {OWNER_KEY.encode(), b"recap-test-other"}


@pytest.mark.unit
def test_a_pin_that_is_not_a_database_number_is_refused() -> None:
    with pytest.raises(RuntimeError, match="RECAP_TEST_REDIS_DB must be"):
        claim_redis_db(pin="sixteen")


def test_a_killed_runs_leftovers_without_a_claim_are_reclaimed(scratch: redis.Redis) -> None:
    # A worker process of a killed run wrote after the run's claim was released.
    scratch.hset("unacked", "tag", "msg")
    scratch.lpush("recap-test-deadbeef", "job")
    scratch.delete(OWNER_KEY)
    assert claim_redis_db(pin=db_of(scratch), owner=ME) == int(db_of(scratch))
    assert scratch.keys() == [OWNER_KEY.encode()]


def test_a_child_pytest_uses_its_parents_pinned_database(tmp_path: Path) -> None:
    # The run's pin, inherited by a child pytest a test starts: the child uses the
    # database its parent claimed (it does not claim it again), and leaves the
    # parent's claim and keys in place.
    claim_services()
    db = str(CLAIMED["db"])
    client = redis.Redis.from_url(f"{REDIS_SERVER}/{db}")
    claim = client.get(OWNER_KEY)
    assert claim is not None
    test = tmp_path / "test_child.py"
    test.write_text("def test_child(clean):\n    pass\n")
    env = {**os.environ, "RECAP_TEST_REDIS_DB": db}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p",
                           "no:cacheprovider", "-p", "tests.conftest", "--rootdir", str(ROOT),
                           "-c", str(ROOT / "pyproject.toml"), str(test)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    try:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert client.get(OWNER_KEY) == claim
    finally:
        client.close()


@pytest.mark.unit
def test_the_database_prefix_is_checked_and_names_the_databases(tmp_path: Path) -> None:
    code = "import tests.env as e; print(e.TEST_DB)"
    env = {**os.environ, "RECAP_TEST_DB_PREFIX": "ci_7_recap_"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("ci_7_recap_"), done.stderr
    env["RECAP_TEST_DB_PREFIX"] = 'x"; DROP'
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "RECAP_TEST_DB_PREFIX must be" in done.stderr
