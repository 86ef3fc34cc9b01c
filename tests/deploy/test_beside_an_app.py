"""Recap's migrations in a database an app's own Alembic history shares: each side
keeps its revision in its own version table (Recap's is recap_alembic_version), so
upgrading or downgrading either, in either order, leaves the other's tables and
revision as they were. A database an older Recap migrated (its revision in
alembic_version) moves over on `recap db upgrade`, in the upgrade's transaction."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, MetaData, Table, create_engine, inspect, select, text
from sqlalchemy.exc import ProgrammingError

from recap.cli import main
from recap.migrate import head_revisions, script_location, upgrade
from tests.deploy.app_history import (
    APP_FIRST,
    APP_HEAD,
    APP_TABLE,
    app_config,
    app_migrate,
    write_app_history,
)
from tests.env import PG_ADMIN, _admin_execute, migrate

pytestmark = pytest.mark.system

HEAD = ", ".join(head_revisions())
APP_TABLES = frozenset({"alembic_version", APP_TABLE})
LEFT_ALONE = "alembic_version belongs to another Alembic history (revision {}), not " \
             "Recap's: left alone"


@pytest.fixture
def shared_pg() -> Iterator[str]:
    """An empty PostgreSQL database of this test's own, dropped after it."""
    name = f"recap_app_{uuid.uuid4().hex[:8]}"
    _admin_execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    finally:
        from recap.db import reset_engines

        reset_engines()  # close the pool's connections before the drop
        _admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _rows(conn: Connection, tables: set[str], table: str) -> tuple[object, ...]:
    if table not in tables:
        return ()
    rows = Table(table, MetaData(), autoload_with=conn)
    return tuple(conn.execute(select(rows).order_by(*rows.c)).all())


def sides(url: str) -> dict[str, tuple[Any, ...]]:
    """The app's side (its tables, revision and rows) and Recap's (its tables, revision)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
            return {"app": (sorted(tables & APP_TABLES),
                            _rows(conn, tables, "alembic_version"),
                            _rows(conn, tables, APP_TABLE)),
                    "recap": (sorted(tables - APP_TABLES),
                              _rows(conn, tables, "recap_alembic_version"))}
    finally:
        engine.dispose()


def output(capsys: pytest.CaptureFixture[str]) -> list[str]:
    out, err = capsys.readouterr()
    assert err == ""
    return [line.split(": ", 1)[1] for line in out.splitlines()]  # without the URL


@pytest.mark.parametrize("down_first", ["app", "recap"])
@pytest.mark.parametrize("up_first", ["app", "recap"])
def test_recap_and_an_app_migrate_one_database_in_either_order(
        up_first: str, down_first: str, shared_pg: str, tmp_path: Path,
        settings_env: Callable[..., None], capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(DATABASE_URL=shared_pg)
    app = write_app_history(tmp_path / "app")
    later = {"app": "recap", "recap": "app"}

    def step(side: str, *, down: bool) -> None:
        if side == "app":
            app_migrate(app, shared_pg, "base" if down else "head", down=down)
        else:
            assert main(["db", "downgrade", "base"] if down else ["db", "upgrade"]) == 0

    for side in (up_first, later[up_first]):
        before = sides(shared_pg)
        step(side, down=False)
        after = sides(shared_pg)
        assert after[later[side]] == before[later[side]], side  # the other side untouched
        assert after[side] != before[side]
    capsys.readouterr()
    engine = create_engine(shared_pg)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO app_orders (id, note) VALUES (7, 'the app''s row')"))
    engine.dispose()

    both = sides(shared_pg)
    assert both["app"] == (sorted(APP_TABLES), ((APP_HEAD,),), ((7, "the app's row"),))
    assert both["recap"][1] == ((HEAD,),)
    assert main(["db", "check"]) == 0
    assert output(capsys) == [f"Recap's schema is at migration {HEAD} (the head)",
                              LEFT_ALONE.format(APP_HEAD)]
    # The app's autogenerate (recap.migrate.outside_recap) sees none of Recap's tables.
    command.check(app_config(app, shared_pg))

    for side in (down_first, later[down_first]):
        before = sides(shared_pg)
        step(side, down=True)
        after = sides(shared_pg)
        assert after[later[side]] == before[later[side]], side
    assert sides(shared_pg) == {"app": (["alembic_version"], (), ()),
                                "recap": (["recap_alembic_version"], ())}


def test_an_app_revision_named_like_recaps_is_the_apps(
        shared_pg: str, tmp_path: Path, settings_env: Callable[..., None],
        capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(DATABASE_URL=shared_pg)
    app = write_app_history(tmp_path / "app")
    app_migrate(app, shared_pg, APP_FIRST)  # "0001", Recap's first revision's id too
    assert main(["db", "check"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.endswith(f"has no Recap tables (never migrated; {LEFT_ALONE.format('0001')})"
                         ": run `recap db upgrade`")
    assert main(["db", "upgrade"]) == 0
    assert output(capsys) == [LEFT_ALONE.format("0001"),
                              f"upgraded from no revision (empty) to {HEAD}"]
    assert sides(shared_pg)["app"] == (sorted(APP_TABLES), (("0001",),), ())
    app_migrate(app, shared_pg)  # the app's history goes on from its own revision
    assert sides(shared_pg)["app"][1] == ((APP_HEAD,),)
    assert main(["db", "current"]) == 0
    assert output(capsys) == [f"{HEAD} (at the head)", LEFT_ALONE.format(APP_HEAD)]


def as_an_older_recap_left_it(url: str) -> None:
    """Recap's revision recorded in alembic_version instead of recap_alembic_version,
    as an older Recap's Alembic wrote it."""
    engine = create_engine(url)
    with engine.begin() as conn:
        [revision] = conn.execute(text("SELECT version_num FROM recap_alembic_version")
                                  ).scalars().all()
        conn.execute(text("DROP TABLE recap_alembic_version"))
        MigrationContext.configure(conn, opts={"version_table": "alembic_version"}).stamp(
            ScriptDirectory(str(script_location())), revision)
    engine.dispose()


@pytest.mark.parametrize("older", ["0005", HEAD])
def test_an_older_recaps_revision_moves_over_on_upgrade(
        older: str, shared_pg: str, settings_env: Callable[..., None],
        capsys: pytest.CaptureFixture[str]) -> None:
    migrate(shared_pg, older)
    as_an_older_recap_left_it(shared_pg)
    settings_env(DATABASE_URL=shared_pg)
    refusal = (f"an older Recap recorded its revision {older} in alembic_version: run "
               "`recap db upgrade` to move it to recap_alembic_version"
               + ("" if older == HEAD else f" and migrate to {HEAD}"))
    for argv in (["db", "check"], ["stats"]):  # every process refuses it, in one line
        assert main(argv) == 1
        [line] = capsys.readouterr().err.splitlines()
        assert line.endswith(refusal), line
    assert main(["db", "current"]) == 0
    assert output(capsys) == [f"an older Recap recorded its revision {older} in "
                              f"alembic_version: `recap db upgrade` moves it "
                              f"(the head is {HEAD})"]

    assert main(["db", "upgrade"]) == 0
    moved = f"moved Recap's revision {older} from alembic_version to recap_alembic_version"
    assert output(capsys) == [moved, f"already at {HEAD}" if older == HEAD
                              else f"upgraded from {older} to {HEAD}"]
    tables, revision = sides(shared_pg)["recap"]
    assert "alembic_version" not in tables and revision == ((HEAD,),)
    assert main(["db", "check"]) == 0
    assert output(capsys) == [f"Recap's schema is at migration {HEAD} (the head)"]


def test_a_failed_upgrade_leaves_the_older_recaps_revision_where_it_was(
        shared_pg: str) -> None:
    migrate(shared_pg, "0019_archive_search_direct")
    as_an_older_recap_left_it(shared_pg)
    engine = create_engine(shared_pg)
    with engine.begin() as conn:  # 0020 adds this column: its migration fails
        conn.execute(text("ALTER TABLE summary_runs ADD COLUMN specifics_stated integer"))
    engine.dispose()
    before = sides(shared_pg)
    with pytest.raises(ProgrammingError, match="specifics_stated"):
        upgrade(shared_pg)
    assert sides(shared_pg) == before  # the move rolled back with the migration


def test_on_sqlite_the_move_keeps_another_historys_row(
        tmp_path: Path, settings_env: Callable[..., None],
        capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    migrate(url)
    as_an_older_recap_left_it(url)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO alembic_version VALUES (:rev)"), {"rev": APP_HEAD})
    engine.dispose()
    settings_env(DATABASE_URL=url)
    assert main(["db", "upgrade"]) == 0
    assert output(capsys) == [LEFT_ALONE.format(APP_HEAD),
                              f"moved Recap's revision {HEAD} from alembic_version to "
                              "recap_alembic_version", f"already at {HEAD}"]
    state = sides(url)
    assert state["app"] == (["alembic_version"], ((APP_HEAD,),), ())
    assert state["recap"][1] == ((HEAD,),)
