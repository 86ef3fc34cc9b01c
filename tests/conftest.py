"""Test environment: a fresh PostgreSQL database, a private Redis db/queue, the
local Messages API server, and an in-process Celery worker.

Settings are read from the environment, so it is set here before ``worker`` is
imported anywhere.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tiktoken_cache() -> str:
    for candidate in (os.environ.get("TIKTOKEN_CACHE_DIR"), ROOT.parent / "shared" /
                      "tiktoken-cache", "/work/shared/tiktoken-cache"):
        if candidate and Path(candidate).is_dir():
            return str(candidate)
    return os.environ.get("TIKTOKEN_CACHE_DIR", "")


from tests.fake_anthropic import FakeAnthropic  # noqa: E402

FAKE = FakeAnthropic().start()
RUN_ID = uuid.uuid4().hex[:8]
PG_ADMIN = os.environ.get("RECAP_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
TEST_DB = f"recap_test_{RUN_ID}"
REDIS_URL = os.environ.get("RECAP_TEST_REDIS", "redis://127.0.0.1:6379/14")
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


@pytest.fixture(scope="session", autouse=True)
def database() -> Iterator[str]:
    """A fresh PostgreSQL database for this run, migrated to head; dropped after."""
    _admin_execute(f'DROP DATABASE IF EXISTS "{TEST_DB}"')
    _admin_execute(f'CREATE DATABASE "{TEST_DB}"')
    url = TEST_ENV["DATABASE_URL"]
    migrate(url)
    yield url
    from worker.db import reset_engines

    reset_engines()
    _admin_execute(f'DROP DATABASE IF EXISTS "{TEST_DB}" WITH (FORCE)')


@pytest.fixture(scope="session")
def fake_api() -> Iterator[FakeAnthropic]:
    yield FAKE


@pytest.fixture(autouse=True)
def clean(database: str) -> Iterator[None]:
    """Empty tables, default settings and a fresh script before every test."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    from worker.jobs.resources import reset_process_state
    from worker.db import transaction
    from worker.settings import get_settings

    # A job left running by the previous test may hold row locks: TRUNCATE then
    # waits, or PostgreSQL breaks a deadlock by cancelling it. Try again.
    for attempt in range(10):
        try:
            with transaction() as s:
                s.execute(text("TRUNCATE chat_messages, chat_sessions, summary_runs, "
                               "memories, archived_messages"))
            break
        except DBAPIError:
            if attempt == 9:
                raise
            time.sleep(0.5)
    FAKE.reset()
    get_settings.cache_clear()
    reset_process_state()
    yield
    FAKE.reset()


@pytest.fixture
def settings_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Override settings for one test: ``settings_env(RECAP_BATCH_SIZE=5)``."""
    from worker.jobs.resources import reset_process_state
    from worker.settings import get_settings

    def apply(**values: object) -> None:
        for k, v in values.items():
            monkeypatch.setenv(k, str(v))
        get_settings.cache_clear()
        reset_process_state()

    yield apply
    get_settings.cache_clear()
    reset_process_state()


@pytest.fixture(scope="session")
def celery_worker_thread(database: str) -> Iterator[object]:
    """A real Celery worker in this process (threads pool) on the test Redis."""
    from celery.contrib.testing.worker import start_worker

    from worker import app

    # The queue name is unique to this run, so nothing is flushed: parallel runs
    # on the same Redis do not disturb each other.
    with start_worker(app, pool="threads", concurrency=4, perform_ping_check=False,
                      loglevel="WARNING", shutdown_timeout=30) as w:
        yield w


def wait_for(predicate: Callable[[], object], *, timeout: float = 30.0,
             interval: float = 0.05, what: str = "condition") -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
