"""Migration 0007 on existing rows: memories keep their session's scope, messages
survive both ways, and a downgrade folds a fact held in two scopes into one row."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.deploy.test_migrations import empty_pg  # noqa: F401  (fixture)
from tests.env import migrate

pytestmark = pytest.mark.system

INSERT_SESSION = "INSERT INTO chat_sessions (id) VALUES ('s1')"
INSERT_MESSAGE = ("INSERT INTO chat_messages (session_id, role, content, token_count) "
                  "VALUES ('s1', 'user', 'hi', 1)")
INSERT_MEMORY = ("INSERT INTO memories (session_id, fact, fact_hash, category, importance) "
                 "VALUES ('s1', 'The user likes tea.', 'h1', 'preference', 3)")


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_existing_memories_keep_their_session_scope(backend: str, empty_pg: str,  # noqa: F811
                                                    tmp_path: Path) -> None:
    url = empty_pg if backend == "postgresql" else f"sqlite:///{tmp_path / 'm.sqlite3'}"
    migrate(url, "0005")
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(INSERT_SESSION))
        conn.execute(text(INSERT_MESSAGE))
        conn.execute(text(INSERT_MEMORY))
    migrate(url, "0007")
    with engine.begin() as conn:
        assert conn.execute(text("SELECT scope, superseded_by FROM memories")).all() == [
            ("s:s1", None)]
        assert conn.execute(text("SELECT user_id FROM chat_sessions")).scalar() is None
        # The session names its user later and mines the same fact again.
        conn.execute(text("UPDATE chat_sessions SET user_id = 'u1'"))
        conn.execute(text("INSERT INTO memories (session_id, scope, fact, fact_hash, category, "
                          "importance) VALUES ('s1', 'u:u1', 'The user likes tea.', 'h1', "
                          "'preference', 3)"))
    migrate(url, "0005", down=True)
    with engine.begin() as conn:
        assert conn.execute(text("SELECT session_id, fact FROM memories")).all() == [
            ("s1", "The user likes tea.")]
        # Neither way copied chat_sessions (SQLite's batch mode would, and the drop
        # of the old table would cascade to the messages).
        assert conn.execute(text("SELECT content FROM chat_messages")).all() == [("hi",)]
    engine.dispose()
