"""memories, archive, titles, per-session settings

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 16:25:57.739396
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('archived_messages',
    sa.Column('id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('session_id', sa.String(length=255), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('token_count', sa.Integer(), nullable=False),
    sa.Column('pinned', sa.Boolean(), server_default='false', nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('run_id', sa.BigInteger(), nullable=False),
    sa.Column('archived_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['chat_sessions.id'], name=op.f('fk_archived_messages_session_id_chat_sessions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_archived_messages'))
    )
    op.create_index('ix_archived_messages_session_id_id', 'archived_messages', ['session_id', 'id'], unique=False)
    op.create_table('memories',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), sa.Identity(always=False), nullable=False),
    sa.Column('session_id', sa.String(length=255), nullable=False),
    sa.Column('fact', sa.Text(), nullable=False),
    sa.Column('fact_hash', sa.String(length=64), nullable=False),
    sa.Column('category', sa.String(length=32), nullable=False),
    sa.Column('importance', sa.Integer(), nullable=False),
    sa.Column('first_message_id', sa.BigInteger(), nullable=True),
    sa.Column('last_message_id', sa.BigInteger(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.CheckConstraint("category IN ('preference', 'personal', 'work', 'plan', 'fact', 'other')", name=op.f('ck_memories_category')),
    sa.CheckConstraint('importance BETWEEN 1 AND 5', name=op.f('ck_memories_importance')),
    sa.ForeignKeyConstraint(['session_id'], ['chat_sessions.id'], name=op.f('fk_memories_session_id_chat_sessions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memories')),
    sa.UniqueConstraint('session_id', 'fact_hash', name=op.f('uq_memories_session_id')),
    sqlite_autoincrement=True
    )
    op.add_column('chat_sessions', sa.Column('title_requested_at', sa.DateTime(timezone=True), nullable=True))
    op.add_column('chat_sessions', sa.Column('overrides', sa.JSON(), nullable=True))
    op.create_index('ix_chat_sessions_untitled', 'chat_sessions', ['title_requested_at'],
                    postgresql_where=sa.text('title IS NULL'),
                    sqlite_where=sa.text('title IS NULL'))


def downgrade() -> None:
    op.drop_index('ix_chat_sessions_untitled', table_name='chat_sessions')
    op.drop_column('chat_sessions', 'overrides')
    op.drop_column('chat_sessions', 'title_requested_at')
    op.drop_table('memories')
    op.drop_index('ix_archived_messages_session_id_id', table_name='archived_messages')
    op.drop_table('archived_messages')
