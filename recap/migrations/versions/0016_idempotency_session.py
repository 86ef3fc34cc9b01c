"""idempotency_keys.session_id: forgetting a session erases its Idempotency-Key answers

Revision ID: 0016_idempotency_session
Revises: 0015_memory_provenance
Create Date: 2026-11-26 09:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0016_idempotency_session'
down_revision = '0015_memory_provenance'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('idempotency_keys') as batch:
        batch.add_column(sa.Column('session_id', sa.String(length=255), nullable=True))
    op.create_index(op.f('ix_idempotency_keys_session_id'), 'idempotency_keys',
                    ['session_id'])


def downgrade() -> None:
    op.drop_index(op.f('ix_idempotency_keys_session_id'), table_name='idempotency_keys')
    with op.batch_alter_table('idempotency_keys') as batch:
        batch.drop_column('session_id')
