"""archive recall: archived_messages.search_text, a full-text index for recall at
reply time, and an index for the retention sweep

PostgreSQL: a GIN index over to_tsvector('simple', coalesce(search_text, content)).
SQLite: an FTS5 table over the same text, kept by triggers (and filled from the
rows already archived). search_text stays NULL for rows archived before: their
content is what they are searched by.

Revision ID: 0017_archive_recall
Revises: 0016_idempotency_session
Create Date: 2026-11-28 08:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0017_archive_recall'
down_revision = '0016_idempotency_session'
branch_labels = None
depends_on = None



def upgrade() -> None:
    op.add_column('archived_messages', sa.Column('search_text', sa.Text(), nullable=True))
    op.create_index('ix_archived_messages_archived_at', 'archived_messages', ['archived_at'],
                    unique=False)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE INDEX ix_archived_messages_search ON archived_messages "
                   "USING gin (to_tsvector('simple', coalesce(search_text, content)))")
        return
    op.execute("CREATE VIRTUAL TABLE archived_messages_fts USING fts5(body)")
    op.execute("INSERT INTO archived_messages_fts (rowid, body) "
               "SELECT id, coalesce(search_text, content) FROM archived_messages")
    op.execute("CREATE TRIGGER archived_messages_fts_insert AFTER INSERT ON archived_messages "
               "BEGIN INSERT INTO archived_messages_fts (rowid, body) VALUES "
               "(new.id, coalesce(new.search_text, new.content)); END")
    op.execute("CREATE TRIGGER archived_messages_fts_delete AFTER DELETE ON archived_messages "
               "BEGIN DELETE FROM archived_messages_fts WHERE rowid = old.id; END")
    op.execute("CREATE TRIGGER archived_messages_fts_update AFTER UPDATE OF content, "
               "search_text ON archived_messages BEGIN "
               "UPDATE archived_messages_fts SET body = coalesce(new.search_text, new.content) "
               "WHERE rowid = new.id; END")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX ix_archived_messages_search")
    else:
        op.execute("DROP TRIGGER archived_messages_fts_insert")
        op.execute("DROP TRIGGER archived_messages_fts_delete")
        op.execute("DROP TRIGGER archived_messages_fts_update")
        op.execute("DROP TABLE archived_messages_fts")
    op.drop_index('ix_archived_messages_archived_at', table_name='archived_messages')
    with op.batch_alter_table('archived_messages') as batch:
        batch.drop_column('search_text')
