"""A worker started against a database that is not at the migration head exits
non-zero before it consumes anything: the queued job stays queued for a worker
that can run it, and nothing in the database changes."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from sqlalchemy import create_engine, text

from tests.env import PG_ADMIN, ROOT, TEST_DB, _admin_execute, claim_services, migrate
from tests.helpers import LOW, seed
from tests.jobs.test_worker_start import START_TIMEOUT_S, worker_cmd, worker_env


@pytest.fixture
def old_schema() -> Iterator[str]:
    """A scratch database one migration behind the head; dropped after the test."""
    name = f"{TEST_DB}_old_schema"
    _admin_execute(f'DROP DATABASE IF EXISTS "{name}"')
    _admin_execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    finally:
        from recap.db import reset_engines

        reset_engines()
        _admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def snapshot(url: str) -> list[tuple[object, ...]]:
    """Every row Recap keeps for sessions, messages and runs, in a fixed order."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(row) for table in ("chat_sessions", "chat_messages", "summary_runs")
                    for row in conn.execute(text(f"SELECT * FROM {table} ORDER BY 1"))]  # noqa: S608
    finally:
        engine.dispose()


def test_a_worker_on_an_old_schema_exits_before_taking_a_job(
        old_schema: str, settings_env: Callable[..., None]) -> None:
    # A session due for a summary, written while the schema was current.
    migrate(old_schema)
    settings_env(DATABASE_URL=old_schema, **LOW)
    sid = f"unmigrated-{uuid.uuid4().hex[:6]}"
    seed(sid, 12)
    from recap.db import reset_engines

    reset_engines()
    migrate(old_schema, "-1", down=True)  # as after installing a newer Recap, unmigrated
    before = snapshot(old_schema)

    env = worker_env(DATABASE_URL=old_schema)
    from recap.worker.celery_app import app

    app.send_task("recap.tasks.summarize_session", (sid,), queue=env["RECAP_QUEUE"])
    client = redis.Redis.from_url(claim_services())  # kombu keeps a queue in a list of its name
    try:
        assert client.llen(env["RECAP_QUEUE"]) == 1

        done = subprocess.run(worker_cmd(env), cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=START_TIMEOUT_S)  # it must exit by itself
        output = done.stdout + done.stderr
        assert done.returncode != 0, output
        [line] = [x for x in done.stderr.splitlines() if x.startswith("recap: error:")]
        assert line.endswith("run `recap db upgrade`") and "is at migration" in line, output
        assert " ready." not in output  # never consumed anything
        assert client.llen(env["RECAP_QUEUE"]) == 1  # the job is still queued
    finally:
        client.delete(env["RECAP_QUEUE"])
        client.close()
    assert snapshot(old_schema) == before  # nothing changed


def test_beat_keeps_its_schedule_in_the_data_directory_and_refuses_an_old_schema(
        old_schema: str, tmp_path: Path) -> None:
    migrate(old_schema, "0005")
    env = worker_env(DATABASE_URL=old_schema, XDG_DATA_HOME=str(tmp_path / "data"))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    cwd.chmod(0o555)  # as a read-only image directory: nothing may be written here
    done = subprocess.run(["celery", "-A", "recap", "beat", "--loglevel", "INFO"], cwd=cwd,
                          env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=START_TIMEOUT_S)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    [line] = [x for x in done.stderr.splitlines() if x.startswith("recap: error:")]
    assert line.endswith("run `recap db upgrade`") and "is at migration 0005" in line, output
    assert "Traceback" not in output
    assert list((tmp_path / "data" / "recap").glob("celerybeat-schedule*"))
    assert list(cwd.iterdir()) == []
