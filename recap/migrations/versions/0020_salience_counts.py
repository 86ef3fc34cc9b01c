"""summary_runs: the retention guard's specifics by rank, and those left in the archive

Revision ID: 0020_salience_counts
Revises: 0019_archive_search_direct
Create Date: 2026-11-28 11:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0020_salience_counts'
down_revision = '0019_archive_search_direct'
branch_labels = None
depends_on = None

COLUMNS = ('specifics_stated', 'specifics_referred', 'specifics_used', 'specifics_rest',
           'specifics_archived')


def upgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        for name in COLUMNS:
            batch.add_column(sa.Column(name, sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        for name in reversed(COLUMNS):
            batch.drop_column(name)
