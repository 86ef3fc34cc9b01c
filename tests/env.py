"""The test environment, set before ``worker`` is imported anywhere: a fresh
PostgreSQL database name, a private Redis db and queue, the local Messages API
server. Imported first by conftest.py; tests import constants from here, never
from conftest.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

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
TEST_DB = f"recap_test_{RUN_ID}"
REDIS_SERVER = os.environ.get("RECAP_TEST_REDIS", "redis://127.0.0.1:6379")
OWNER_KEY = "recap-test-owner"
OWNER = f"{RUN_ID}:{os.getpid()}"


def _alive(owner: str) -> bool:
    """Whether the test run that claimed a database (``run:pid``) is still running."""
    try:
        os.kill(int(owner.rsplit(":", 1)[1]), 0)
    except (ValueError, IndexError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def claim_redis_db(server: str = REDIS_SERVER) -> int:
    """An empty Redis database (1-15) of this run's own: claimed with a key only one
    run can set, and flushed by :func:`release_redis_db` at the end. Everything the
    run's brokers write (queues, kombu's binding keys, unacked hashes) stays there."""
    import redis

    for db in range(15, 0, -1):
        client = redis.Redis.from_url(f"{server}/{db}")
        try:
            owner = client.get(OWNER_KEY)
            if owner is not None and not _alive(str(owner, "utf-8") if isinstance(owner, bytes)
                                                else str(owner)):
                client.flushdb()  # left by a test run that was killed
            if client.dbsize() == 0 and client.set(OWNER_KEY, OWNER, nx=True):
                return db
        finally:
            client.close()
    raise RuntimeError(f"no empty Redis database (1-15) on {server} for the tests")


def release_redis_db(db: int, server: str = REDIS_SERVER) -> None:
    """Flush this run's Redis database, if it is still ours."""
    import redis

    client = redis.Redis.from_url(f"{server}/{db}")
    try:
        if client.get(OWNER_KEY) == OWNER.encode():
            client.flushdb()
    finally:
        client.close()


REDIS_DB = claim_redis_db()
REDIS_URL = f"{REDIS_SERVER}/{REDIS_DB}"
API_KEY = f"sk-ant-test-{uuid.uuid4().hex}"

TEST_ENV = {
    "TIKTOKEN_CACHE_DIR": _tiktoken_cache(),
    "RECAP_ENV": "test",
    "DATABASE_URL": PG_ADMIN.rsplit("/", 1)[0] + "/" + TEST_DB,
    "CELERY_BROKER_URL": REDIS_URL,
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
