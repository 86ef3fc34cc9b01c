"""0020 adds the retention guard's counts by salience to summary_runs and takes them
away again, keeping the runs recorded before it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from tests.env import migrate

pytestmark = pytest.mark.system

COLUMNS = {"specifics_stated", "specifics_referred", "specifics_used", "specifics_rest",
           "specifics_archived"}


def _columns(url: str) -> set[str]:
    engine = create_engine(url)
    names = {c["name"] for c in inspect(engine).get_columns("summary_runs")}
    engine.dispose()
    return names


def test_0020_adds_and_drops_the_rank_counts(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.sqlite3'}"
    migrate(url, "0019_archive_search_direct")
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO summary_runs (session_id, attempt, status, reason, "
                          "messages_condensed) VALUES ('s', 0, 'applied', 'r', 3)"))
    engine.dispose()
    assert not COLUMNS & _columns(url)
    migrate(url, "0020_salience_counts")
    assert COLUMNS <= _columns(url)
    migrate(url, "0019_archive_search_direct", down=True)
    assert not COLUMNS & _columns(url)
    engine = create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT messages_condensed FROM summary_runs")).scalar() == 3
    engine.dispose()
