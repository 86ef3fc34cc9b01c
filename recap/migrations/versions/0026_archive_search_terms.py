"""archived_messages.search_terms: what the recall index reads of a message too
long for a tsvector

A tsvector holds at most 1 MB, and to_tsvector refuses a longer one: a GIN
index over to_tsvector('simple', coalesce(search_text, content)) refuses the row
of a message of about 1 MB of distinct words. On PostgreSQL the index is rebuilt over coalesce(search_terms, search_text,
content): search_terms holds a long message's distinct words, bounded
(recap.store.search); it stays NULL for every message short enough to index
whole, rows archived before included. Rebuilding the index reads the archive
once and holds writes to it meanwhile. SQLite's FTS5 table has no such limit and
keeps indexing the whole text.

Downgrading refuses while an archived message has search terms: the previous
index cannot hold it (nor a deleted one the table still holds until a VACUUM).

Revision ID: 0026_archive_search_terms
Revises: 0025_runs_by_model
Create Date: 2026-12-07 12:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0026_archive_search_terms'
down_revision = '0025_runs_by_model'
branch_labels = None
depends_on = None


# The recall index over each expression: constants, never formatted from input.
INDEXES = {
    "terms": "CREATE INDEX ix_archived_messages_search ON archived_messages USING gin "
             "(to_tsvector('simple', coalesce(search_terms, search_text, content))) "
             "WITH (fastupdate = off)",
    "text": "CREATE INDEX ix_archived_messages_search ON archived_messages USING gin "
            "(to_tsvector('simple', coalesce(search_text, content))) "
            "WITH (fastupdate = off)",
}


def _search_index(which: str) -> None:
    op.execute("DROP INDEX ix_archived_messages_search")
    op.execute(INDEXES[which])


def upgrade() -> None:
    op.add_column('archived_messages', sa.Column('search_terms', sa.Text(), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        _search_index("terms")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        held = op.get_bind().scalar(sa.text(
            "SELECT count(*) FROM archived_messages WHERE search_terms IS NOT NULL"))
        if held:
            raise RuntimeError(
                f"cannot downgrade below 0026_archive_search_terms: {held} archived "
                "message(s) are too long for the previous recall index; delete them "
                "(recap forget, or archive retention), then VACUUM archived_messages")
        _search_index("text")
    # In place (SQLite 3.35+): a rebuilt table would lose the FTS5 triggers on it.
    op.execute("ALTER TABLE archived_messages DROP COLUMN search_terms")
