"""The tiers and their services.

Every test module says its tier in ``pytestmark``:

- ``pytest.mark.unit``: pure code and the in-process stand-in; no PostgreSQL, no
  Redis, no worker, no subprocess. Recap's URLs point at closed ports while one
  runs, so a unit test that reached for a service fails at once.
- no mark (the integration tier, marked ``integration`` here): PostgreSQL, Redis
  and the in-process Celery worker, each test starting from empty tables.
- ``pytest.mark.system``: subprocess workers and servers, soaks, deploy files,
  virtualenvs, the browser; the same clean tables.

A run claims its Redis database and creates its PostgreSQL database only when it
collected a test that needs them (docs/TESTING.md). Under pytest-xdist each
worker claims a Redis database of its own (a worker's control and event
broadcasts reach only its own in-process worker), with its own queue and
PostgreSQL database; a pytest that a test starts uses its parent's. A pinned
database (RECAP_TEST_REDIS_DB) is one database: such a run uses one process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator

import pytest

from recap.testing import FakeAnthropic
from tests.env import (
    CLAIMED,
    CLOSED_BROKER,
    CLOSED_DATABASE,
    FAKE,
    REDIS_DB_PIN,
    TEST_DB,
    TEST_ENV,
    _admin_execute,
    claim_services,
    migrate,
    release_services,
)
from tests.helpers import WORKER_RUNNING, join_worker

TIERS = ("unit", "integration", "system")
# Set once a process claimed its Redis database, for any child pytest a test starts
# (which uses it instead of claiming one).
SHARED_DB_ENV = "RECAP_TEST_CLAIMED_REDIS_DB"


def pytest_configure(config: pytest.Config) -> None:
    for tier, what in (("unit", "no services: pure code and the in-process stand-in"),
                       ("integration", "PostgreSQL, Redis and the in-process worker"),
                       ("system", "subprocess workers and servers, soaks, deploy, browser")):
        config.addinivalue_line("markers", f"{tier}: {what}")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    # Most tests wait on PostgreSQL, Redis, a worker or a subprocess, not on a core:
    # two processes per core keep the cores busy. The unit tier waits on nothing and
    # runs in about a minute of one core: one process, spared every worker's start-up.
    # RECAP_TEST_WORKERS overrides.
    given = os.environ.get("RECAP_TEST_WORKERS", "").strip()
    if given:
        return int(given)
    if (config.getoption("markexpr", "") or "").strip() == "unit":
        return 0
    if REDIS_DB_PIN:
        return 0  # one database: processes sharing it would hear each other's broadcasts
    return 2 * (os.cpu_count() or 1)


def pytest_unconfigure(config: pytest.Config) -> None:
    release_services()


def tier_of(item: pytest.Item) -> str:
    """The tier the test is marked with (its own mark, its class's or its module's),
    else integration. Two tiers on one test are refused: ``-m`` would select it for
    both."""
    found = [t for t in TIERS if item.get_closest_marker(t) is not None]
    if len(found) > 1:
        raise pytest.UsageError(f"{item.nodeid} is marked {found}: one tier per test")
    return found[0] if found else "integration"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if tier_of(item) == "integration" and item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.integration)  # so that `-m integration` selects it


def pytest_collection_finish(session: pytest.Session) -> None:
    # After deselection (-m, -k): only a run left with a test that needs services
    # claims them, before its first test runs, so Celery's app and the settings
    # are built on the claimed broker.
    if not any(tier_of(item) != "unit" for item in session.items):
        return
    shared = os.environ.get(SHARED_DB_ENV)
    if shared and "db" not in CLAIMED:
        _adopt(int(shared))
    claim_services()
    # A child pytest a test starts uses this run's database, never claims one.
    os.environ[SHARED_DB_ENV] = str(CLAIMED["db"])


def _adopt(db: int) -> None:
    """Use the database the xdist controller (or a parent run) claimed; this
    process does not own it, so it never releases it."""
    from tests.env import REDIS_SERVER

    url = f"{REDIS_SERVER}/{db}"
    TEST_ENV["CELERY_BROKER_URL"] = os.environ["CELERY_BROKER_URL"] = url
    CLAIMED["db"] = db


@pytest.fixture(autouse=True)
def fresh_token_ratios() -> None:
    """Every test starts with no learnt token ratio: a ratio one test's stand-in
    taught this process would size the next test's requests."""
    from recap.llm import calibrate

    calibrate.forget()


@pytest.fixture(autouse=True)
def tier_services(request: pytest.FixtureRequest) -> None:
    """What the test's tier needs, set up before anything else the test asks for:
    nothing but closed ports for a unit test, clean tables otherwise."""
    fixture = "no_services" if tier_of(request.node) == "unit" else "clean"
    request.getfixturevalue(fixture)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    # A report crosses to the xdist controller as UTF-8: a failure that prints a
    # lone surrogate (tests of bad model output do) must not end the whole run.
    report = yield
    if report.failed and report.longrepr is not None:
        text = str(report.longrepr)
        safe = text.encode("utf-8", "backslashreplace").decode("utf-8")
        if safe != text:
            report.longrepr = safe
    report.sections = [(name, body.encode("utf-8", "backslashreplace").decode("utf-8"))
                       for name, body in report.sections]
    return report


@pytest.fixture
def no_services(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A unit test's environment: Recap's database and broker at closed ports."""
    from recap.worker.jobs.resources import reset_process_state

    monkeypatch.setenv("DATABASE_URL", CLOSED_DATABASE)
    monkeypatch.setenv("CELERY_BROKER_URL", CLOSED_BROKER)
    FAKE.reset()
    reset_process_state()
    yield
    monkeypatch.undo()
    FAKE.reset()
    reset_process_state()


@pytest.fixture(scope="session")
def database() -> Iterator[str]:
    """A fresh PostgreSQL database for this process, migrated to head; dropped after."""
    _admin_execute(f'DROP DATABASE IF EXISTS "{TEST_DB}"')
    _admin_execute(f'CREATE DATABASE "{TEST_DB}"')
    url = TEST_ENV["DATABASE_URL"]
    migrate(url)
    yield url
    from recap.db import reset_engines

    reset_engines()
    _admin_execute(f'DROP DATABASE IF EXISTS "{TEST_DB}" WITH (FORCE)')


@pytest.fixture(scope="session")
def fake_api() -> Iterator[FakeAnthropic]:
    yield FAKE


@pytest.fixture
def clean(database: str) -> Iterator[None]:
    """Empty tables, default settings and a fresh script before the test; after it,
    wait for every job the test queued (a test never inherits running work)."""
    from sqlalchemy import text

    from recap.db import transaction
    from recap.worker.jobs.resources import reset_process_state

    with transaction() as s:
        s.execute(text("TRUNCATE chat_messages, chat_sessions, summary_runs, memories, "
                       "memory_sources, archived_messages, heartbeats, title_runs, "
                       "summary_versions, stored_keys, memory_demotions"))
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

    # The queue name is unique to this process, so nothing is flushed: parallel
    # runs (and xdist workers) on the same Redis do not disturb each other.
    with start_worker(app, pool="threads", concurrency=4, perform_ping_check=False,
                      loglevel="WARNING", shutdown_timeout=30,
                      hostname=f"{TEST_ENV['RECAP_QUEUE']}@localhost") as w:
        WORKER_RUNNING["in_process"] = True
        try:
            yield w
        finally:
            WORKER_RUNNING["in_process"] = False
