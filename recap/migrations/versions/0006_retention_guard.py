"""summary_runs: the retention guard's counts (specifics kept, repaired, held back)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 18:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

COUNTS = ('specifics_total', 'specifics_missing_before_repair', 'specifics_missing_after',
          'specifics_in_details', 'specifics_to_memories', 'messages_held_back')


def upgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        for name in COUNTS:
            batch.add_column(sa.Column(name, sa.Integer(), nullable=True))
        batch.add_column(sa.Column('repaired', sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        batch.drop_column('repaired')
        for name in reversed(COUNTS):
            batch.drop_column(name)
