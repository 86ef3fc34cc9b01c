"""Test environment: a fresh PostgreSQL database, a private Redis db/queue, the
local Messages API server, and an in-process Celery worker.

Settings are read from the environment, so it is set here before ``worker`` is
imported anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from recap.testing import FakeAnthropic
from tests.env import (
    FAKE,
    REDIS_DB,
    TEST_DB,
    TEST_ENV,
    _admin_execute,
    migrate,
    release_redis_db,
)
from tests.helpers import WORKER_RUNNING, join_worker


@pytest.fixture(scope="session", autouse=True)
def database() -> Iterator[str]:
    """A fresh PostgreSQL database for this run, migrated to head; dropped after
    (with the run's own Redis database)."""
    _admin_execute(f'DROP DATABASE IF EXISTS "{TEST_DB}"')
    _admin_execute(f'CREATE DATABASE "{TEST_DB}"')
    url = TEST_ENV["DATABASE_URL"]
    migrate(url)
    yield url
    from recap.db import reset_engines

    reset_engines()
    _admin_execute(f'DROP DATABASE IF EXISTS "{TEST_DB}" WITH (FORCE)')
    release_redis_db(REDIS_DB)


@pytest.fixture(scope="session")
def fake_api() -> Iterator[FakeAnthropic]:
    yield FAKE


@pytest.fixture(autouse=True)
def clean(database: str) -> Iterator[None]:
    """Empty tables, default settings and a fresh script before every test; after
    it, wait for every job the test queued (a test never inherits running work)."""
    from sqlalchemy import text

    from recap.db import transaction
    from recap.worker.jobs.resources import reset_process_state

    with transaction() as s:
        s.execute(text("TRUNCATE chat_messages, chat_sessions, summary_runs, memories, "
                       "memory_sources, archived_messages, heartbeats, title_runs, "
                       "summary_versions, stored_keys"))
    FAKE.reset()
    reset_process_state()
    yield
    FAKE.reset()  # releases any held call, so the worker can finish it
    join_worker(TEST_ENV["RECAP_QUEUE"])


@pytest.fixture
def settings_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Override settings for one test: ``settings_env(RECAP_BATCH_SIZE=5)``."""
    from recap.worker.jobs.resources import reset_process_state

    def apply(**values: object) -> None:
        for k, v in values.items():
            monkeypatch.setenv(k, str(v))
        reset_process_state()

    yield apply
    monkeypatch.undo()
    reset_process_state()


@pytest.fixture(scope="session")
def celery_worker_thread(database: str) -> Iterator[object]:
    """A real Celery worker in this process (threads pool) on the test Redis."""
    from celery.contrib.testing.worker import start_worker

    from recap import app

    # The queue name is unique to this run, so nothing is flushed: parallel runs
    # on the same Redis do not disturb each other.
    with start_worker(app, pool="threads", concurrency=4, perform_ping_check=False,
                      loglevel="WARNING", shutdown_timeout=30,
                      hostname=f"{TEST_ENV['RECAP_QUEUE']}@localhost") as w:
        WORKER_RUNNING["in_process"] = True
        try:
            yield w
        finally:
            WORKER_RUNNING["in_process"] = False
