"""summary_runs: answers refused as frozen or empty and asked again another way

Revision ID: 0018_frozen_answers
Revises: 0017_archive_recall
Create Date: 2026-11-28 07:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0018_frozen_answers'
down_revision = '0017_archive_recall'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        batch.add_column(sa.Column('frozen_answers', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        batch.drop_column('frozen_answers')
