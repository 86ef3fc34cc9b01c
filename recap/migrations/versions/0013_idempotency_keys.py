"""idempotency_keys: the HTTP API's Idempotency-Key answers

Revision ID: 0013_idempotency_keys
Revises: 0012_stored_keys
Create Date: 2026-11-25 10:50:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0013_idempotency_keys'
down_revision = '0012_stored_keys'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'idempotency_keys',
        sa.Column('key', sa.String(length=255), nullable=False),
        sa.Column('fingerprint', sa.String(length=64), nullable=False),
        sa.Column('status', sa.Integer(), nullable=False),
        sa.Column('response', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('key', name=op.f('pk_idempotency_keys')),
    )
    op.create_index(op.f('ix_idempotency_keys_expires_at'), 'idempotency_keys',
                    ['expires_at'])


def downgrade() -> None:
    op.drop_index(op.f('ix_idempotency_keys_expires_at'), table_name='idempotency_keys')
    op.drop_table('idempotency_keys')
