"""Which database the ``recap`` CLI uses, and a one-line error when it is not
migrated (issue 11, item 14): a scratch PostgreSQL database of its own, and the
embedded SQLite default in a temporary directory (never in the checkout)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.env import PG_ADMIN, ROOT, TEST_DB, _admin_execute
from worker.cli import main
from worker.settings import DEFAULT_DATABASE_URL

HINT = "(is it migrated? alembic upgrade head)"


@pytest.fixture
def unmigrated_postgres() -> Iterator[str]:
    """An empty PostgreSQL database (no tables), dropped after the test."""
    name = f"{TEST_DB}_unmigrated"
    _admin_execute(f'DROP DATABASE IF EXISTS "{name}"')
    _admin_execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    finally:
        from worker.db import reset_engines

        reset_engines()  # close the pool's connections before the drop
        _admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_an_unmigrated_postgres_gives_a_one_line_hint(
        unmigrated_postgres: str, settings_env: Callable[..., None],
        capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(DATABASE_URL=unmigrated_postgres)
    assert main(["stats"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    [line] = err.splitlines()  # one line, no traceback
    assert line.startswith("recap: error: database: ") and line.endswith(HINT), line
    assert "does not exist" in line


def test_without_database_url_the_cli_says_which_database_it_uses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings_env: Callable[..., None],
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # the default is relative: keep it out of the checkout
    monkeypatch.delenv("DATABASE_URL")
    settings_env()  # forget the settings and engines built on the test database
    before = (ROOT / "recap.sqlite3").exists()
    assert main(["stats"]) == 1  # an empty file: not migrated
    err = capsys.readouterr().err
    first, second = err.splitlines()
    assert first == (f"recap: DATABASE_URL is not set: using the embedded default "
                     f"{DEFAULT_DATABASE_URL} (in {tmp_path})")
    assert second.startswith("recap: error: database: no such table") and \
        second.endswith(HINT), second
    assert (tmp_path / "recap.sqlite3").is_file()
    assert (ROOT / "recap.sqlite3").exists() == before  # nothing landed in the checkout
