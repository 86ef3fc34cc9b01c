"""normal_blocked carries the thresholds it was computed under

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 12:20:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('chat_sessions') as batch:
        batch.add_column(sa.Column('normal_blocked_under', sa.String(length=120), nullable=True))
    # A flag of unknown provenance must not hold: let the next job decide again.
    op.execute("UPDATE chat_sessions SET normal_blocked = false WHERE normal_blocked")


def downgrade() -> None:
    with op.batch_alter_table('chat_sessions') as batch:
        batch.drop_column('normal_blocked_under')
