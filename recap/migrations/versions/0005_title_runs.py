"""title_runs: the audit rows of title calls (API usage for recap stats, errors for recap failures)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 12:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('title_runs',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), sa.Identity(always=False), nullable=False),
    sa.Column('session_id', sa.String(length=255), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('model', sa.String(length=100), nullable=True),
    sa.Column('input_tokens', sa.Integer(), nullable=True),
    sa.Column('output_tokens', sa.Integer(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.CheckConstraint("status IN ('titled', 'kept', 'failed')", name=op.f('ck_title_runs_status')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_title_runs')),
    sqlite_autoincrement=True
    )
    op.create_index('ix_title_runs_session_id_id', 'title_runs', ['session_id', 'id'], unique=False)
    op.create_index('ix_title_runs_status_id', 'title_runs', ['status', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_title_runs_status_id', table_name='title_runs')
    op.drop_index('ix_title_runs_session_id_id', table_name='title_runs')
    op.drop_table('title_runs')
