"""user memories hold the user's own words: demote those that do not

A memory in a user's scope (``u:<user_id>``, read by every session of the user)
must be a verbatim span of what the user typed in the batch that stated it
(recap.core.memories.verbatim). Each live user-scoped memory is checked against the user
turns of each of its ``user`` or ``legacy`` sources that are still stored
(chat_messages, archived_messages); one that no source shows word for word is
demoted: those sources become ``unverified`` and the memory moves to the scope of
its first session (``s:<session_id>``), or, when that scope already holds the
same fact, is superseded by that row. A memory whose messages are gone (deleted
when condensed, without the archive) cannot be checked, and is demoted too.

``memory_demotions`` records each demoted source with what it was, so a
downgrade puts every memory back where it was (unless a new memory took its
place in the user's scope meanwhile) and drops the table.

Revision ID: 0021_verbatim_user_memories
Revises: 0020_salience_counts
Create Date: 2026-11-29 09:00:00
"""
import json
from collections.abc import Sequence
from typing import Any

from alembic import op
import sqlalchemy as sa

from recap.core.memories.provenance import own_text
from recap.core.memories.verbatim import is_span


revision = '0021_verbatim_user_memories'
down_revision = '0020_salience_counts'
branch_labels = None
depends_on = None

_MEMORIES = sa.text("SELECT id, session_id, scope, fact, fact_hash FROM memories "
                    "WHERE scope LIKE 'u:%' AND superseded_by IS NULL ORDER BY id")
_SOURCES = sa.text("SELECT id, session_id, kind, first_message_id, last_message_id "
                   "FROM memory_sources WHERE memory_id = :m AND kind IN ('user', 'legacy')")
_TURNS = [sa.text("SELECT content, blocks FROM chat_messages WHERE session_id = :s "
                  "AND role = 'user' AND id BETWEEN :lo AND :hi"),
          sa.text("SELECT content, blocks FROM archived_messages WHERE session_id = :s "
                  "AND role = 'user' AND id BETWEEN :lo AND :hi")]


def upgrade() -> None:
    op.create_table('memory_demotions',
    sa.Column('source_id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('memory_id', sa.BigInteger(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('scope', sa.String(length=257), nullable=False),
    sa.Column('superseded', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['memory_id'], ['memories.id'], name=op.f('fk_memory_demotions_memory_id_memories'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['source_id'], ['memory_sources.id'], name=op.f('fk_memory_demotions_source_id_memory_sources'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('source_id', name=op.f('pk_memory_demotions'))
    )
    conn = op.get_bind()
    for memory in conn.execute(_MEMORIES).all():
        sources = conn.execute(_SOURCES, {"m": memory.id}).all()
        if sources and not any(_stated(conn, memory.fact, s) for s in sources):
            _demote(conn, memory, sources)


def _stated(conn: Any, fact: str, source: Any) -> bool:
    """Whether ``fact`` is a verbatim span of the user's own words in ``source``'s batch."""
    if source.first_message_id is None or source.last_message_id is None:
        return False  # a legacy source without its range: nothing to read
    own: list[str] = []
    for query in _TURNS:
        for content, blocks in conn.execute(query, {"s": source.session_id,
                                                    "lo": source.first_message_id,
                                                    "hi": source.last_message_id}):
            if isinstance(blocks, str):  # JSON as text (SQLite)
                blocks = json.loads(blocks)
            own.append(own_text("user", content, blocks))
    return is_span(fact, own)


def _demote(conn: Any, memory: Any, sources: Sequence[Any]) -> None:
    scope = f"s:{memory.session_id}"
    twin = conn.execute(sa.text("SELECT id FROM memories WHERE scope = :scope AND "
                                "fact_hash = :h"), {"scope": scope, "h": memory.fact_hash}
                        ).scalar()
    if twin is None:
        conn.execute(sa.text("UPDATE memories SET scope = :scope WHERE id = :m"),
                     {"scope": scope, "m": memory.id})
    else:
        conn.execute(sa.text("UPDATE memories SET superseded_by = :t WHERE id = :m"),
                     {"t": twin, "m": memory.id})
    for source in sources:
        conn.execute(sa.text("INSERT INTO memory_demotions (source_id, memory_id, kind, scope, "
                             "superseded) VALUES (:s, :m, :k, :scope, :sup)"),
                     {"s": source.id, "m": memory.id, "k": source.kind, "scope": memory.scope,
                      "sup": twin is not None})
        conn.execute(sa.text("UPDATE memory_sources SET kind = 'unverified' WHERE id = :s"),
                     {"s": source.id})


def downgrade() -> None:
    conn = op.get_bind()
    rows = conn.execute(sa.text(
        "SELECT d.source_id, d.memory_id, d.kind, d.scope, d.superseded, m.fact_hash "
        "FROM memory_demotions d JOIN memories m ON m.id = d.memory_id")).all()
    for row in rows:
        conn.execute(sa.text("UPDATE memory_sources SET kind = :k WHERE id = :s"),
                     {"k": row.kind, "s": row.source_id})
    for row in {r.memory_id: r for r in rows}.values():
        if row.superseded:
            conn.execute(sa.text("UPDATE memories SET superseded_by = NULL WHERE id = :m"),
                         {"m": row.memory_id})
            continue
        taken = conn.execute(sa.text("SELECT 1 FROM memories WHERE scope = :scope AND "
                                     "fact_hash = :h AND id <> :m"),
                             {"scope": row.scope, "h": row.fact_hash, "m": row.memory_id}
                             ).scalar()
        if taken is None:
            conn.execute(sa.text("UPDATE memories SET scope = :scope WHERE id = :m"),
                         {"scope": row.scope, "m": row.memory_id})
    op.drop_table('memory_demotions')
