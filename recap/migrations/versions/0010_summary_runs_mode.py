"""summary_runs.mode: the policy rule that made a job's plan, stored as a value

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 11:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        batch.add_column(sa.Column('mode', sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        batch.drop_column('mode')
