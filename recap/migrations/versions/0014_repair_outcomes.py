"""summary_runs: what the retention guard's repair call cost, and when it was skipped

Revision ID: 0014_repair_outcomes
Revises: 0013_idempotency_keys
Create Date: 2026-11-25 11:20:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0014_repair_outcomes'
down_revision = '0013_idempotency_keys'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        batch.add_column(sa.Column('repair_input_tokens', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('repair_output_tokens', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('repair_skipped', sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        batch.drop_column('repair_skipped')
        batch.drop_column('repair_output_tokens')
        batch.drop_column('repair_input_tokens')
