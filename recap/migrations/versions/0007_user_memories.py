"""user-scoped memories: chat_sessions.user_id, memories.scope and superseded_by

Memories were keyed by (session_id, fact_hash) and died with their session. They
now belong to a scope: ``u:<user_id>`` for a session that names its user (shared
by all of the user's sessions), else ``s:<session_id>``; session_id stays as the
provenance (first session that said it). Existing memories keep their session
scope. superseded_by marks a memory replaced by a newer one (kept for audit).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 18:00:00
"""
from alembic import op
import sqlalchemy as sa

from recap.models.base import NAMING_CONVENTION


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # chat_sessions is never altered in batch mode: on SQLite that copies the table and
    # drops the old one, and with foreign keys on the drop cascades to every message.
    op.add_column('chat_sessions', sa.Column('user_id', sa.String(length=255), nullable=True))
    op.create_index('ix_chat_sessions_user_id', 'chat_sessions', ['user_id'], unique=False)
    with op.batch_alter_table('memories') as batch:
        batch.add_column(sa.Column('scope', sa.String(length=257), nullable=True))
        batch.add_column(sa.Column('superseded_by', sa.BigInteger(), nullable=True))
    op.execute("UPDATE memories SET scope = 's:' || session_id")
    with op.batch_alter_table('memories', naming_convention=NAMING_CONVENTION) as batch:
        batch.alter_column('scope', existing_type=sa.String(length=257), nullable=False)
        batch.drop_constraint('uq_memories_session_id', type_='unique')
        batch.create_unique_constraint('uq_memories_scope', ['scope', 'fact_hash'])
        batch.create_index('ix_memories_session_id', ['session_id'], unique=False)


def downgrade() -> None:
    # A session that named its user late can hold one fact twice (its own scope and
    # the user's): keep the older row so (session_id, fact_hash) is unique again.
    op.execute("DELETE FROM memories WHERE id IN (SELECT m.id FROM memories m "
               "JOIN memories o ON o.session_id = m.session_id "
               "AND o.fact_hash = m.fact_hash AND o.id < m.id)")
    with op.batch_alter_table('memories', naming_convention=NAMING_CONVENTION) as batch:
        batch.drop_index('ix_memories_session_id')
        batch.drop_constraint('uq_memories_scope', type_='unique')
        batch.create_unique_constraint('uq_memories_session_id', ['session_id', 'fact_hash'])
        batch.drop_column('superseded_by')
        batch.drop_column('scope')
    op.drop_index('ix_chat_sessions_user_id', table_name='chat_sessions')
    op.drop_column('chat_sessions', 'user_id')
