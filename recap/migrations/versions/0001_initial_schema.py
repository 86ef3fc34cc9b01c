"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-21 16:03:35.631622
"""
from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('chat_sessions',
    sa.Column('id', sa.String(length=255), nullable=False),
    sa.Column('rolling_summary', sa.Text(), nullable=True),
    sa.Column('summary_tokens', sa.Integer(), server_default='0', nullable=False),
    sa.Column('summary_version', sa.Integer(), server_default='0', nullable=False),
    sa.Column('summarized_message_count', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('message_count', sa.Integer(), server_default='0', nullable=False),
    sa.Column('active_tokens', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('title', sa.Text(), nullable=True),
    sa.Column('needs_escalation', sa.Boolean(), server_default='false', nullable=False),
    sa.Column('normal_blocked', sa.Boolean(), server_default='false', nullable=False),
    sa.Column('lease_token', sa.String(length=36), nullable=True),
    sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('lost_leases', sa.Integer(), server_default='0', nullable=False),
    sa.Column('enqueued_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('blocked_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.Column('summary_updated_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_chat_sessions'))
    )
    op.create_index('ix_chat_sessions_active_tokens', 'chat_sessions', ['active_tokens'], unique=False)
    op.create_index('ix_chat_sessions_context_tokens', 'chat_sessions', ['summary_tokens', 'active_tokens'], unique=False)
    op.create_table('summary_runs',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), sa.Identity(always=False), nullable=False),
    sa.Column('session_id', sa.String(length=255), nullable=False),
    sa.Column('task_id', sa.String(length=255), nullable=True),
    sa.Column('attempt', sa.Integer(), server_default='1', nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('messages_condensed', sa.Integer(), server_default='0', nullable=False),
    sa.Column('condensed_tokens', sa.BigInteger(), nullable=True),
    sa.Column('first_message_id', sa.BigInteger(), nullable=True),
    sa.Column('last_message_id', sa.BigInteger(), nullable=True),
    sa.Column('input_tokens', sa.Integer(), nullable=True),
    sa.Column('output_tokens', sa.Integer(), nullable=True),
    sa.Column('summary_tokens', sa.Integer(), nullable=True),
    sa.Column('latency_ms', sa.Integer(), nullable=True),
    sa.Column('model', sa.String(length=100), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.CheckConstraint("status IN ('applied', 'skipped', 'superseded', 'failed', 'dead')", name=op.f('ck_summary_runs_status')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_summary_runs')),
    sqlite_autoincrement=True
    )
    op.create_index('ix_summary_runs_session_id_id', 'summary_runs', ['session_id', 'id'], unique=False)
    op.create_index('ix_summary_runs_status_created_at', 'summary_runs', ['status', 'created_at'], unique=False)
    op.create_table('chat_messages',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), sa.Identity(always=False), nullable=False),
    sa.Column('session_id', sa.String(length=255), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('token_count', sa.Integer(), nullable=False),
    sa.Column('pinned', sa.Boolean(), server_default='false', nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.CheckConstraint("role IN ('user', 'assistant', 'system', 'tool')", name=op.f('ck_chat_messages_role')),
    sa.CheckConstraint('token_count >= 0', name=op.f('ck_chat_messages_token_count')),
    sa.ForeignKeyConstraint(['session_id'], ['chat_sessions.id'], name=op.f('fk_chat_messages_session_id_chat_sessions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_chat_messages')),
    sqlite_autoincrement=True
    )
    op.create_index('ix_chat_messages_session_id_id', 'chat_messages', ['session_id', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_chat_messages_session_id_id', table_name='chat_messages')
    op.drop_table('chat_messages')
    op.drop_index('ix_summary_runs_status_created_at', table_name='summary_runs')
    op.drop_index('ix_summary_runs_session_id_id', table_name='summary_runs')
    op.drop_table('summary_runs')
    op.drop_index('ix_chat_sessions_context_tokens', table_name='chat_sessions')
    op.drop_index('ix_chat_sessions_active_tokens', table_name='chat_sessions')
    op.drop_table('chat_sessions')
