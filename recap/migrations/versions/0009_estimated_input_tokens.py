"""summary_runs.estimated_input_tokens: Recap's own estimate next to the API's count

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 18:10:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        batch.add_column(sa.Column('estimated_input_tokens', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        batch.drop_column('estimated_input_tokens')
