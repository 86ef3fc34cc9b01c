"""Migration 0024 on existing rows: a session's full history starts from its active
messages plus what applied runs condensed (not a rewound run's, whose messages are
back), its other spend sums at 0 from the upgrade on; a downgrade drops them."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from tests.deploy.test_migrations import empty_pg  # noqa: F401  (fixture)
from tests.env import migrate

pytestmark = pytest.mark.system

BEFORE = "0021_verbatim_user_memories"
RUNS = [("applied", 400, None), ("applied", 50, 7), ("failed", 90, None)]


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_history_starts_from_what_was_condensed_and_a_downgrade_drops_the_sums(
        backend: str, empty_pg: str, tmp_path: Path) -> None:  # noqa: F811
    url = empty_pg if backend == "postgresql" else f"sqlite:///{tmp_path / 'm.sqlite3'}"
    migrate(url, BEFORE)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO chat_sessions (id, active_tokens, message_count) "
                          "VALUES ('old', 120, 3), ('new', 0, 0)"))
        for status, condensed, rewound in RUNS:
            conn.execute(text("INSERT INTO summary_runs (session_id, status, condensed_tokens, "
                              "rewound_after) VALUES ('old', :s, :c, :r)"),
                         {"s": status, "c": condensed, "r": rewound})
    migrate(url)
    with engine.begin() as conn:
        rows = {r.id: r for r in conn.execute(text(
            "SELECT id, history_tokens, spend_since, spend_replies, spend_recap_write, "
            "spend_prefix_at FROM chat_sessions"))}
    assert rows["old"].history_tokens == 120 + 400 and rows["new"].history_tokens == 0
    assert rows["old"].spend_since is not None
    assert (rows["old"].spend_replies, rows["old"].spend_recap_write,
            rows["old"].spend_prefix_at) == (0, 0, None)
    migrate(url, BEFORE, down=True)
    columns = {c["name"] for c in inspect(engine).get_columns("chat_sessions")}
    assert not {c for c in columns if c.startswith("spend_") or c == "history_tokens"}
    engine.dispose()
