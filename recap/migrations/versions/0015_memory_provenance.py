"""memory_sources: where each memory came from, one row per batch that stated it

A memory now goes only when its last source goes (forget, rewind, edit), and only
what the user stated in their own words is kept in the user's scope. Existing
memories get one ``legacy`` source each: their first session and message range,
as memories.session_id and the message ids recorded them.

Revision ID: 0015_memory_provenance
Revises: 0014_repair_outcomes
Create Date: 2026-11-25 11:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0015_memory_provenance'
down_revision = '0014_repair_outcomes'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('memory_sources',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), sa.Identity(always=False), nullable=False),
    sa.Column('memory_id', sa.BigInteger(), nullable=False),
    sa.Column('session_id', sa.String(length=255), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('first_message_id', sa.BigInteger(), nullable=True),
    sa.Column('last_message_id', sa.BigInteger(), nullable=True),
    sa.Column('run_id', sa.BigInteger(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.CheckConstraint("kind IN ('user', 'assistant', 'tool', 'document', 'unverified', 'guard', 'legacy')", name=op.f('ck_memory_sources_kind')),
    sa.ForeignKeyConstraint(['memory_id'], ['memories.id'], name=op.f('fk_memory_sources_memory_id_memories'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['session_id'], ['chat_sessions.id'], name=op.f('fk_memory_sources_session_id_chat_sessions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memory_sources')),
    sqlite_autoincrement=True
    )
    op.create_index('ix_memory_sources_memory_id', 'memory_sources', ['memory_id'], unique=False)
    op.create_index('ix_memory_sources_session_id_last_message_id', 'memory_sources',
                    ['session_id', 'last_message_id'], unique=False)
    op.execute("INSERT INTO memory_sources (memory_id, session_id, kind, first_message_id, "
               "last_message_id) SELECT id, session_id, 'legacy', first_message_id, "
               "last_message_id FROM memories")


def downgrade() -> None:
    op.drop_index('ix_memory_sources_session_id_last_message_id', table_name='memory_sources')
    op.drop_index('ix_memory_sources_memory_id', table_name='memory_sources')
    op.drop_table('memory_sources')
