"""chat_sessions: what the replies cost next to full history with caching

Adds the per-session sums of recap.core.spend, kept by the reply path
(recap.api.spend) and by each recorded run (the summarizer's API tokens).
``history_tokens`` (every message the session ever stored) starts from the
active messages plus those applied runs condensed (and no rewind restored); the
other sums start at 0, counted from ``spend_since``: the upgrade for the sessions
that existed before it (NULL, a later session's: since it was created).

Revision ID: 0024_session_spend
Revises: 0023_run_resends
Create Date: 2026-11-29 08:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0024_session_spend'
down_revision = '0023_run_resends'
branch_labels = None
depends_on = None

SUMS = ('spend_recap_read', 'spend_recap_write', 'spend_recap_uncached',
        'spend_summarize_input', 'spend_summarize_output', 'spend_full_read',
        'spend_full_write', 'spend_full_uncached', 'spend_prefix_tokens',
        'spend_prefix_history')
COUNTS = ('spend_replies', 'spend_prefix_version')

_HISTORY = sa.text(
    "UPDATE chat_sessions SET history_tokens = active_tokens + COALESCE(("
    "SELECT SUM(condensed_tokens) FROM summary_runs WHERE summary_runs.session_id = "
    "chat_sessions.id AND summary_runs.status = 'applied' "
    # A rewound run's messages are back among the active ones.
    "AND summary_runs.rewound_after IS NULL), 0)")


def upgrade() -> None:
    with op.batch_alter_table('chat_sessions') as batch:
        batch.add_column(sa.Column('history_tokens', sa.BigInteger(), server_default='0',
                                   nullable=False))
        batch.add_column(sa.Column('spend_since', sa.DateTime(timezone=True), nullable=True))
        for name in COUNTS:
            batch.add_column(sa.Column(name, sa.Integer(), server_default='0', nullable=False))
        for name in SUMS:
            batch.add_column(sa.Column(name, sa.BigInteger(), server_default='0',
                                       nullable=False))
        batch.add_column(sa.Column('spend_prefix_at', sa.DateTime(timezone=True),
                                   nullable=True))
    op.execute(_HISTORY)
    op.execute(sa.text("UPDATE chat_sessions SET spend_since = CURRENT_TIMESTAMP"))


def downgrade() -> None:
    # One column at a time, never batch mode: on SQLite a batch drop copies the
    # table and drops the old one, and with foreign keys on that drop would cascade
    # to every message and memory of every session (SQLite 3.35+ drops a column
    # in place).
    for name in ('spend_prefix_at', *reversed(SUMS), *reversed(COUNTS), 'spend_since',
                 'history_tokens'):
        op.drop_column('chat_sessions', name)
