"""archived_messages: the recall index updated on insert, with no pending list

A GIN index's fast update keeps new entries in a pending list (up to
gin_pending_list_limit, 4 MB by default) that every search reads whole: each
recall lookup paid a few milliseconds per cue for it, even for a word found
nowhere. With fastupdate off, the job that archives messages updates the index
itself (off the reply path) and a lookup reads a few index pages.

Revision ID: 0019_archive_search_direct
Revises: 0018_frozen_answers
Create Date: 2026-11-28 11:30:00
"""
from alembic import op


revision = '0019_archive_search_direct'
down_revision = '0018_frozen_answers'
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return  # SQLite's FTS5 table has no pending list
    op.execute("ALTER INDEX ix_archived_messages_search SET (fastupdate = off)")
    # What is already pending, moved into the index now rather than read on every lookup.
    op.execute("SELECT gin_clean_pending_list('ix_archived_messages_search'::regclass)")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER INDEX ix_archived_messages_search RESET (fastupdate)")
