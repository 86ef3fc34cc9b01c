"""The archive's retention period: the sweeper deletes archived messages older than
RECAP_ARCHIVE_RETENTION_DAYS, oldest first, in bounded batches.

Each batch is its own short transaction through the ``archived_at`` index, so a
large backlog (retention shortened, or a sweeper that was down) drains over a few
sweeps without one long lock. 0 keeps the archive for the session's life
(``recap forget`` and erasure still delete it). An archived original whose message
is still in the window (a tool result cleared to a stub, recap.worker.jobs.clear)
is kept while that stub is: the archive is the only place its text lives.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import delete, exists, select

from recap.db import rowcount, transaction
from recap.models import ArchivedMessage
from recap.models import messages_table as MESSAGES
from recap.settings import Settings

log = logging.getLogger("recap.sweeper")

# Rows one batch deletes, and batches one sweep runs: at most 5,000 rows per sweep.
PURGE_BATCH = 1000
PURGE_BATCHES = 5


def purge_archive(settings: Settings, *, now: datetime, batch: int = PURGE_BATCH,
                  batches: int = PURGE_BATCHES) -> int:
    """Delete up to ``batch * batches`` archived messages archived more than
    RECAP_ARCHIVE_RETENTION_DAYS before ``now``; returns how many (0 when off)."""
    if settings.archive_retention_days <= 0:
        return 0
    cutoff = now - timedelta(days=settings.archive_retention_days)
    still_stubbed = exists().where(MESSAGES.c.id == ArchivedMessage.id)
    expired = (select(ArchivedMessage.id).where(ArchivedMessage.archived_at < cutoff,
                                                ~still_stubbed)
               .order_by(ArchivedMessage.archived_at).limit(batch))
    total = 0
    for _ in range(batches):
        with transaction() as s:
            gone = rowcount(s.execute(delete(ArchivedMessage).where(
                ArchivedMessage.id.in_(expired.scalar_subquery()))))
        total += gone
        if gone < batch:
            break
    if total:
        log.info("archive retention: deleted %d archived messages older than %d days",
                 total, settings.archive_retention_days)
    return total
