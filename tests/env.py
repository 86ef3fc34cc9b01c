"""The test environment, set before Recap reads its settings: a fresh PostgreSQL
database name, a private Redis db and queue, the local Messages API server.
RECAP_TEST_PG (an admin URL of the PostgreSQL server), RECAP_TEST_REDIS (a Redis
server), RECAP_TEST_REDIS_DB (one database of it) and RECAP_TEST_DB_PREFIX (the
names of the databases a run creates) point the run at other services
(docs/TESTING.md). Imported first by conftest.py; tests import constants from here,
never from conftest.

Importing this module touches no service: the Redis database is claimed by
:func:`claim_services` (conftest calls it once the run has collected a test that
needs services), and until then Recap's URLs point at closed ports, so a unit test
that reached for a service would fail at once instead of writing anywhere.
"""

from __future__ import annotations

import os
import uuid
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _tiktoken_cache() -> str:
    # Offline encodings: the variable, else a tiktoken-cache folder next to the checkout.
    from recap.paths import checkout_tiktoken_cache

    given = os.environ.get("TIKTOKEN_CACHE_DIR")
    if given and Path(given).is_dir():
        return given
    return str(checkout_tiktoken_cache() or given or "")


from recap.testing import FakeAnthropic  # noqa: E402

FAKE = FakeAnthropic().start()
RUN_ID = uuid.uuid4().hex[:8]
PG_ADMIN = os.environ.get("RECAP_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
DB_PREFIX = os.environ.get("RECAP_TEST_DB_PREFIX", "recap_test_")
if not DB_PREFIX or not all(c.isalnum() or c == "_" for c in DB_PREFIX):
    raise RuntimeError(f"RECAP_TEST_DB_PREFIX must be letters, digits and _, got {DB_PREFIX!r}")
TEST_DB = f"{DB_PREFIX}{RUN_ID}"
REDIS_SERVER = os.environ.get("RECAP_TEST_REDIS", "redis://127.0.0.1:6379")
OWNER_KEY = "recap-test-owner"
OWNER = f"{RUN_ID}:{os.getpid()}"
# RECAP_TEST_REDIS_DB pins the run to one Redis database (it must be empty or a
# killed run's); unset, the run claims an empty one from 15 down to 1.
REDIS_DB_PIN = os.environ.get("RECAP_TEST_REDIS_DB", "").strip()
# The keys a test run writes to its database: its claim, its queues (recap-test-*,
# recap-start-*, ... with their priority variants), kombu's bindings and deadline
# sets (_kombu.*) and unacked hashes. A database holding any other key is someone
# else's: never flushed, never claimed.
RUN_KEYS = (OWNER_KEY, "recap-*", "_kombu.*", "unacked", "unacked_index", "unacked_mutex")


def _alive(owner: str) -> bool:
    """Whether the test run that claimed a database (``run:pid``) is still running."""
    try:
        os.kill(int(owner.rsplit(":", 1)[1]), 0)
    except (ValueError, IndexError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def _run_keys_only(client: Any) -> bool:
    """Whether every key of the database is one a test run writes (RUN_KEYS)."""
    return all(any(fnmatchcase(str(k, "utf-8", "replace"), p) for p in RUN_KEYS)
               for k in client.scan_iter(count=1000))


def _candidates(pin: str) -> list[int]:
    if not pin:
        return list(range(15, 0, -1))
    if not pin.isdigit() or not 0 <= int(pin) <= 15:
        raise RuntimeError(f"RECAP_TEST_REDIS_DB must be a Redis database number (0-15), "
                           f"got {pin!r}")
    return [int(pin)]


def claim_redis_db(server: str = REDIS_SERVER, *, pin: str = REDIS_DB_PIN,
                   owner: str = OWNER) -> int:
    """A Redis database of this run's own: an empty one (15 down to 1, or the one
    RECAP_TEST_REDIS_DB names), claimed with a key only one run can set. A database
    a killed run left (its claim's process is gone, or its claim was released
    while a child process of the run still wrote to it) is emptied first only when
    it holds nothing but a test run's keys (RUN_KEYS); one with any other key is
    never touched. Everything the run's brokers write stays there;
    :func:`release_redis_db` deletes it at the end."""
    import redis

    for db in _candidates(pin):
        client = redis.Redis.from_url(f"{server}/{db}")
        try:
            claimed = client.get(OWNER_KEY)
            holder: str | None = claimed.decode("utf-8", "replace") \
                if isinstance(claimed, bytes) else claimed
            if (holder is None or not _alive(holder)) and _run_keys_only(client):
                client.flushdb()  # a killed test run's keys, and nothing else
            if client.dbsize() == 0 and client.set(OWNER_KEY, owner, nx=True):
                return db
        finally:
            client.close()
    where = (f"Redis database {pin} (RECAP_TEST_REDIS_DB) on {server} is not empty"
             if pin else f"no empty Redis database (1-15) on {server}")
    raise RuntimeError(f"{where}: the tests write only to a database of their own; set "
                       "RECAP_TEST_REDIS_DB to an empty one, or RECAP_TEST_REDIS to another "
                       "server")


def release_redis_db(db: int, server: str = REDIS_SERVER, *, owner: str = OWNER) -> None:
    """Delete this run's keys (RUN_KEYS) from its database, if it is still ours; a
    key anyone else wrote there stays."""
    import redis

    client = redis.Redis.from_url(f"{server}/{db}")
    try:
        if client.get(OWNER_KEY) != owner.encode():
            return
        for pattern in RUN_KEYS[1:]:
            for key in list(client.scan_iter(match=pattern, count=1000)):
                client.delete(key)
        client.delete(OWNER_KEY)
    finally:
        client.close()


# Nothing listens on port 1: what a unit test would reach if it touched a service.
CLOSED_BROKER = "redis://127.0.0.1:1/0"
CLOSED_DATABASE = "postgresql+psycopg://postgres@127.0.0.1:1/recap_unit_tests_use_no_database"
API_KEY = f"sk-ant-test-{uuid.uuid4().hex}"

TEST_ENV = {
    "TIKTOKEN_CACHE_DIR": _tiktoken_cache(),
    "RECAP_ENV": "test",
    "DATABASE_URL": PG_ADMIN.rsplit("/", 1)[0] + "/" + TEST_DB,
    "CELERY_BROKER_URL": CLOSED_BROKER,
    "ANTHROPIC_API_KEY": API_KEY,
    "ANTHROPIC_BASE_URL": FAKE.url,
    "RECAP_QUEUE": f"recap-test-{RUN_ID}",
    "RECAP_MAX_RETRIES": "3",
    "RECAP_RETRY_BACKOFF_S": "0.05",
    "RECAP_RETRY_BACKOFF_MAX_S": "0.3",
    "RECAP_LLM_TIMEOUT_S": "3",
    "RECAP_TASK_SOFT_TIME_LIMIT_S": "20",
    "RECAP_TASK_TIME_LIMIT_S": "25",
    "RECAP_LEASE_S": "30",
    "RECAP_VISIBILITY_TIMEOUT_S": "60",
    # Off by default here so each test's scripted replies and request counts are
    # about summaries; tests/test_memories.py turns it on (it is on in production).
    "RECAP_EXTRACT_MEMORIES": "false",
    "RECAP_TITLES_ENABLED": "false",  # likewise; tests/test_titles.py turns it on
    # Likewise: scripted summaries here lose specifics on purpose; the scenarios,
    # tests/jobs/test_retention.py and the soak turn the guard on (on in production).
    "RECAP_RETENTION_GUARD": "false",
    # Likewise: a worker's start-up call would take a scripted reply meant for a job;
    # tests/jobs/test_worker_check.py turns it on (on in production).
    "RECAP_CHECK_AT_START": "false",
}
os.environ.update(TEST_ENV)
CLAIMED: dict[str, int] = {}


def claim_services() -> str:
    """Claim this run's Redis database (once) and point Recap's broker at it; returns
    its URL. Called before the first test of a run that needs services."""
    if "db" not in CLAIMED:
        CLAIMED["db"] = claim_redis_db()
        url = f"{REDIS_SERVER}/{CLAIMED['db']}"
        TEST_ENV["CELERY_BROKER_URL"] = os.environ["CELERY_BROKER_URL"] = url
    return f"{REDIS_SERVER}/{CLAIMED['db']}"


def release_services() -> None:
    """Delete this run's keys from its Redis database, if it claimed one."""
    if "db" in CLAIMED:
        release_redis_db(CLAIMED.pop("db"))


def _admin_execute(sql: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(sql))
    engine.dispose()


def migrate(url: str, revision: str = "head", *, down: bool = False) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.attributes["url"] = url
    cfg.attributes["configure_logger"] = False
    (command.downgrade if down else command.upgrade)(cfg, revision)
