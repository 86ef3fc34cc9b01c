"""chat_sessions.noop_*: the sweeper backs off sessions whose jobs find nothing to do

Revision ID: 0011_sweep_noop_backoff
Revises: 0010
Create Date: 2026-11-25 11:10:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0011_sweep_noop_backoff'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('chat_sessions') as batch:
        batch.add_column(sa.Column('noop_runs', sa.Integer(), server_default='0',
                                   nullable=False))
        batch.add_column(sa.Column('noop_backoff_until', sa.DateTime(timezone=True),
                                   nullable=True))
        batch.add_column(sa.Column('noop_context_tokens', sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('chat_sessions') as batch:
        batch.drop_column('noop_context_tokens')
        batch.drop_column('noop_backoff_until')
        batch.drop_column('noop_runs')
