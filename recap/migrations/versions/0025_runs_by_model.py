"""summary_runs: an index on (model, status, id), for a model's latest applied runs
(how its repairs and its folds went lately, read by every job's claim)

Revision ID: 0025_runs_by_model
Revises: 0024_session_spend
Create Date: 2026-11-29 11:00:00
"""
from alembic import op


revision = '0025_runs_by_model'
down_revision = '0024_session_spend'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_summary_runs_model_status_id', 'summary_runs',
                    ['model', 'status', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_summary_runs_model_status_id', table_name='summary_runs')
