"""``recap db upgrade|current|check`` and the refusal every command makes before it
touches a database that is unreachable or not at the migration head: one line
naming the URL (no password), what is wrong and the command that fixes it. With
no DATABASE_URL, the embedded SQLite default in the user's data directory is
created and migrated, and said so once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from recap.cli import main
from recap.migrate import head_revisions
from tests.env import PG_ADMIN, TEST_DB, _admin_execute, migrate
from tests.helpers import wait_for

pytestmark = pytest.mark.system

HEAD = ", ".join(head_revisions())
RECAP = str(Path(sys.executable).parent / "recap")


@pytest.fixture
def scratch_postgres() -> Iterator[str]:
    """An empty PostgreSQL database (no tables), dropped after the test; its URL
    carries a password, which no output may show."""
    name = f"{TEST_DB}_scratch"
    _admin_execute(f'DROP DATABASE IF EXISTS "{name}"')
    _admin_execute(f'CREATE DATABASE "{name}"')
    host = PG_ADMIN.rsplit("/", 1)[0].replace("postgres@", "postgres:hunter2@")
    try:
        yield f"{host}/{name}"
    finally:
        from recap.db import reset_engines

        reset_engines()  # close the pool's connections before the drop
        _admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert out == ""
    [line] = err.splitlines()  # one line, no traceback
    assert "hunter2" not in line and "***" in line
    return line


def test_an_unmigrated_database_is_refused_before_the_command_runs(
        scratch_postgres: str, settings_env: Callable[..., None],
        capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(DATABASE_URL=scratch_postgres)
    assert main(["stats"]) == 1
    line = one_line(capsys)
    assert line.startswith("recap: error: database postgresql+psycopg://postgres:***@")
    assert line.endswith("has no Recap tables (never migrated): run `recap db upgrade`")


def test_db_check_current_and_upgrade(scratch_postgres: str,
                                      settings_env: Callable[..., None],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(DATABASE_URL=scratch_postgres)
    assert main(["db", "check"]) == 1
    assert "never migrated" in one_line(capsys)
    assert main(["db", "current"]) == 0
    assert capsys.readouterr().out.endswith(f": no revision (empty) (the head is {HEAD})\n")

    migrate(scratch_postgres, "0005")  # an older Recap's schema
    assert main(["db", "check"]) == 1
    assert one_line(capsys).endswith(
        f": Recap's schema is at migration 0005, this Recap needs {HEAD}: "
        "run `recap db upgrade`")
    assert main(["stats"]) == 1  # every command refuses it
    assert "recap db upgrade" in one_line(capsys)

    assert main(["db", "upgrade"]) == 0
    out = capsys.readouterr().out
    assert out.endswith(f": upgraded from 0005 to {HEAD}\n") and "hunter2" not in out
    assert main(["db", "check"]) == 0
    assert capsys.readouterr().out.endswith(
        f": Recap's schema is at migration {HEAD} (the head)\n")
    assert main(["db", "current"]) == 0
    assert capsys.readouterr().out.endswith(f": {HEAD} (at the head)\n")
    assert main(["db", "upgrade"]) == 0
    assert capsys.readouterr().out.endswith(f": already at {HEAD}\n")
    assert main(["sessions"]) == 0


def test_a_database_migrated_by_a_newer_recap_is_named_as_such(
        scratch_postgres: str, settings_env: Callable[..., None],
        capsys: pytest.CaptureFixture[str]) -> None:
    migrate(scratch_postgres)
    from sqlalchemy import create_engine, text

    engine = create_engine(scratch_postgres)
    with engine.begin() as conn:
        conn.execute(text("UPDATE recap_alembic_version SET version_num = '0999'"))
    engine.dispose()
    settings_env(DATABASE_URL=scratch_postgres)
    assert main(["db", "check"]) == 1
    assert one_line(capsys).endswith(": Recap's schema is at migration 0999, which this "
                                     "Recap does not know (migrated by a newer Recap?): "
                                     "upgrade Recap to that version")


def test_an_unreachable_database_is_one_line(settings_env: Callable[..., None],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers import free_port

    settings_env(DATABASE_URL=f"postgresql+psycopg://postgres:hunter2@127.0.0.1:"
                              f"{free_port()}/recap")
    assert main(["sessions"]) == 1
    line = one_line(capsys)
    assert " is unreachable (" in line and line.endswith(
        "start it or correct DATABASE_URL, then `recap db upgrade`")
    for action in ("upgrade", "check", "current"):
        assert main(["db", action]) == 1
        assert " is unreachable (" in one_line(capsys)


def recap(*args: str, cwd: Path, data: Path) -> subprocess.CompletedProcess[str]:
    """``recap ARGS`` in a fresh process with no DATABASE_URL and ``data`` as the
    user's data directory."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env["XDG_DATA_HOME"] = str(data)
    return subprocess.run([RECAP, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_without_database_url_the_embedded_default_is_created_and_said_once(
        tmp_path: Path) -> None:
    data, cwd = tmp_path / "data", tmp_path / "cwd"
    cwd.mkdir()
    first = recap("sessions", cwd=cwd, data=data)
    assert first.returncode == 0, first.stderr
    database = data / "recap" / "recap.sqlite3"
    assert first.stderr == (f"recap: DATABASE_URL is not set: created the embedded SQLite "
                            f"database {database} (set DATABASE_URL to use PostgreSQL)\n")
    assert "no sessions" in first.stdout
    again = recap("sessions", cwd=cwd, data=data)
    assert (again.returncode, again.stderr) == (0, "")  # said once
    current = recap("db", "current", cwd=cwd, data=data)
    assert current.stdout == f"sqlite:///{database}: {HEAD} (at the head)\n"
    assert list(cwd.iterdir()) == []  # nothing lands in the current directory


def test_two_upgrades_at_once_take_turns_and_both_report_the_head(
        scratch_postgres: str) -> None:
    """Two ``recap db upgrade`` processes on an empty database (two deploys starting
    together): the second waits for the first's migrations, runs none of its own,
    says so and exits 0. The test holds the migration lock until both wait on it,
    so both have read the empty database before either migrates."""
    from sqlalchemy import create_engine, text

    from recap.revisions import MIGRATION_LOCK

    env = {**os.environ, "DATABASE_URL": scratch_postgres}
    engine = create_engine(scratch_postgres)
    try:
        with engine.connect() as holder:
            holder.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK})
            procs = [subprocess.Popen([RECAP, "db", "upgrade"], env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                     for _ in range(2)]
            waiting = text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                           "AND NOT granted AND objid = :lo")
            wait_for(lambda: holder.execute(waiting, {"lo": MIGRATION_LOCK & 0xFFFFFFFF})
                     .scalar() == 2, timeout=60, what="both upgrades waiting on the lock")
            holder.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK})
            results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    finally:
        engine.dispose()
    assert [code for code, _, _ in results] == [0, 0], results
    assert all(err == "" for _, _, err in results), results
    lines = sorted(out.strip().split(": ", 1)[1] for _, out, _ in results)
    assert lines == [f"already at {HEAD}: another upgrade migrated it from no revision "
                     "(empty) meanwhile", f"upgraded from no revision (empty) to {HEAD}"]
    assert all("hunter2" not in out for _, out, _ in results)
