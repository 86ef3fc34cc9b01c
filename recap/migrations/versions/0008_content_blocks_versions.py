"""content blocks on messages (JSONB), tool links, summary_versions, rewind columns

Existing rows are plain-text messages: their ``blocks`` stay NULL, which is how a
string message is stored (``content`` is the message), so no row needs
rewriting. Legacy ``tool`` rows were stored without the id of their tool_use and
cannot be given one; they keep replaying as labelled user turns. Each session
that already has a summary gets its current summary as its first recorded
version (covering through the newest message its applied runs condensed).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 18:00:00
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def _blocks() -> sa.types.TypeEngine:
    return sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True), 'postgresql')


def upgrade() -> None:
    for table in ('chat_messages', 'archived_messages'):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column('blocks', _blocks(), nullable=True))
            batch.add_column(sa.Column('tool_links', sa.Text(), nullable=True))
    with op.batch_alter_table('summary_runs') as batch:
        batch.add_column(sa.Column('rewound_after', sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column('undone_by', sa.BigInteger(), nullable=True))
    op.create_table('summary_versions',
    sa.Column('session_id', sa.String(length=255), nullable=False),
    sa.Column('version', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('tokens', sa.Integer(), nullable=False),
    sa.Column('covers_through', sa.BigInteger(), nullable=True),
    sa.Column('run_id', sa.BigInteger(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['chat_sessions.id'], name=op.f('fk_summary_versions_session_id_chat_sessions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('session_id', 'version', name=op.f('pk_summary_versions'))
    )
    op.execute(
        "INSERT INTO summary_versions (session_id, version, text, tokens, covers_through) "
        "SELECT s.id, s.summary_version, s.rolling_summary, s.summary_tokens, "
        "(SELECT MAX(r.last_message_id) FROM summary_runs r "
        " WHERE r.session_id = s.id AND r.status = 'applied') "
        "FROM chat_sessions s WHERE s.rolling_summary IS NOT NULL AND s.summary_version > 0")


def downgrade() -> None:
    op.drop_table('summary_versions')
    with op.batch_alter_table('summary_runs') as batch:
        batch.drop_column('undone_by')
        batch.drop_column('rewound_after')
    for table in ('archived_messages', 'chat_messages'):
        with op.batch_alter_table(table) as batch:
            batch.drop_column('tool_links')
            batch.drop_column('blocks')
