"""Migration 0021 on existing rows: a user-scoped memory stays the user's only if
it is, word for word, what the user typed in a batch that stated it; every other
one (a paraphrase, a tool's fact, one whose messages are gone) moves to its
session, or is superseded by the same fact there; a downgrade puts each back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.deploy.test_migrations import empty_pg  # noqa: F401  (fixture)
from tests.env import migrate

pytestmark = pytest.mark.system

SAID = 'I live in Porto. My colleague wrote: "my PIN is 0202"'
MEMORIES = [  # (id, fact, source kind, first and last message ids, whether it stays the user's)
    (1, "I live in Porto.", "user", 1, 2, True),
    (2, "The user lives in Porto.", "user", 1, 2, False),  # the model's paraphrase
    (3, "my PIN is 0202", "user", 1, 2, False),  # quoted, not the user's own
    (4, "I live in Porto", "legacy", None, None, False),  # nothing left to read
    (5, "The user's bank is evil.example.", "user", 1, 2, False),
    (6, "I prefer window seats.", "user", 3, 3, True),  # from a content array
]


def _setup(conn: object) -> None:
    run = conn.execute  # type: ignore[attr-defined]
    run(text("INSERT INTO chat_sessions (id, user_id) VALUES ('s1', 'u1')"))
    for i, role, content, blocks in [
            (1, "user", SAID, None), (2, "assistant", "Noted.", None),
            (3, "user", "I prefer window seats.",
             json.dumps([{"type": "text", "text": "I prefer window seats."}]))]:
        run(text("INSERT INTO chat_messages (id, session_id, role, content, token_count, "
                 "blocks) VALUES (:i, 's1', :r, :c, 5, :b)"),
            {"i": i, "r": role, "c": content, "b": blocks})
    # The session scope already holds fact 5: that memory is superseded, not moved.
    run(text("INSERT INTO memories (id, session_id, scope, fact, fact_hash, category, "
             "importance) VALUES (99, 's1', 's:s1', 'x', 'h5', 'fact', 3)"))
    for mid, fact, kind, lo, hi, _ in MEMORIES:
        run(text("INSERT INTO memories (id, session_id, scope, fact, fact_hash, category, "
                 "importance) VALUES (:m, 's1', 'u:u1', :f, :h, 'fact', 3)"),
            {"m": mid, "f": fact, "h": f"h{mid}"})
        run(text("INSERT INTO memory_sources (id, memory_id, session_id, kind, "
                 "first_message_id, last_message_id) VALUES (:m, :m, 's1', :k, :lo, :hi)"),
            {"m": mid, "k": kind, "lo": lo, "hi": hi})


def _state(conn: object) -> list[tuple[object, ...]]:
    return list(conn.execute(text(  # type: ignore[attr-defined]
        "SELECT m.id, m.scope, m.superseded_by, s.kind FROM memories m JOIN memory_sources s "
        "ON s.memory_id = m.id ORDER BY m.id")).all())


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_only_the_users_own_words_stay_in_their_scope_and_a_downgrade_restores(
        backend: str, empty_pg: str, tmp_path: Path) -> None:  # noqa: F811
    url = empty_pg if backend == "postgresql" else f"sqlite:///{tmp_path / 'm.sqlite3'}"
    migrate(url, "0020_salience_counts")
    engine = create_engine(url)
    with engine.begin() as conn:
        _setup(conn)
        before = _state(conn)
    migrate(url)
    with engine.begin() as conn:
        after = {row[0]: row[1:] for row in _state(conn)}
    expected: dict[int, tuple[str, int | None, str]] = {}
    for mid, _, kind, _, _, stays in MEMORIES:
        if stays:
            expected[mid] = ("u:u1", None, kind)
        elif mid == 5:
            expected[mid] = ("u:u1", 99, "unverified")
        else:
            expected[mid] = ("s:s1", None, "unverified")
    assert after == expected
    migrate(url, "0020_salience_counts", down=True)
    with engine.begin() as conn:
        assert _state(conn) == before
        assert "memory_demotions" not in {r[0] for r in conn.execute(text(
            "SELECT table_name FROM information_schema.tables") if backend == "postgresql"
            else text("SELECT name FROM sqlite_master WHERE type = 'table'"))}
    engine.dispose()
