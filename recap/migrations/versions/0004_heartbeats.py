"""heartbeats (when the sweeper last ran) and an index on overridden sessions, for recap metrics

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 10:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('heartbeats',
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_heartbeats'))
    )
    # The sweeper and recap metrics page through sessions with overrides by id.
    op.create_index('ix_chat_sessions_overridden', 'chat_sessions', ['id'],
                    postgresql_where=sa.text('overrides IS NOT NULL'),
                    sqlite_where=sa.text('overrides IS NOT NULL'))


def downgrade() -> None:
    op.drop_index('ix_chat_sessions_overridden', table_name='chat_sessions')
    op.drop_table('heartbeats')
