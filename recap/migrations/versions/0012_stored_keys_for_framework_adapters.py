"""stored_keys: framework item ids a session already holds (agent framework adapters)

Revision ID: 0012_stored_keys
Revises: 0011_sweep_noop_backoff
Create Date: 2026-11-25 10:50:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0012_stored_keys'
down_revision = '0011_sweep_noop_backoff'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'stored_keys',
        sa.Column('session_id', sa.String(length=255), nullable=False),
        sa.Column('key', sa.String(length=255), nullable=False),
        sa.Column('message_id', sa.BigInteger(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.func.now(),
                  nullable=False),
        sa.PrimaryKeyConstraint('session_id', 'key', name=op.f('pk_stored_keys')),
    )
    op.create_index('ix_stored_keys_session_id_message_id', 'stored_keys',
                    ['session_id', 'message_id'])


def downgrade() -> None:
    op.drop_index('ix_stored_keys_session_id_message_id', table_name='stored_keys')
    op.drop_table('stored_keys')
