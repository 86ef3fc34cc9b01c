"""summary_runs: resends of a batch after an unusable answer, their input tokens, and
whether the fold was kept extractively because no way of asking the model worked

Revision ID: 0023_run_resends
Revises: 0021_verbatim_user_memories
Create Date: 2026-11-29 08:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0023_run_resends'
down_revision = '0021_verbatim_user_memories'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        batch.add_column(sa.Column('resends', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('resend_input_tokens', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('fallback', sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('summary_runs') as batch:
        batch.drop_column('fallback')
        batch.drop_column('resend_input_tokens')
        batch.drop_column('resends')
