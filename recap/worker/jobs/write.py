"""The fenced write every new summary goes through: a summarize job's apply and
a resummarize alike.

:func:`write_summary` runs one UPDATE that matches no row unless the caller's
lease token and summary version still hold; it writes the summary, moves the
counters by what was condensed, releases the lease and records what the plan on
the remaining messages says (pending follow-up, escalation, normal_blocked). The
caller owns the transaction and does the rest of its writes in it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from sqlalchemy import Boolean, Update, bindparam, case, func, null, update

from recap.core.planning import policy
from recap.db import Db, db_now, on_server_clock
from recap.models import sessions_table as SESSIONS
from recap.settings import Settings
from recap.store.fence import holds
from recap.worker.jobs.claim import blocked_flags


class Written(NamedTuple):
    """The session's counters right after the write, and the clock it was written on."""

    summary_version: int
    message_count: int
    now: datetime


def write_summary(session_id: str, *, db: Db, token: str, version: int, summary: str,
                  summary_tokens: int, condensed: Sequence[int], condensed_tokens: int,
                  after: policy.Plan, settings: Settings,
                  now: datetime | None = None) -> Written | None:
    """Write ``summary`` under the fence; None (nothing written) when the lease
    ``token`` or the summary ``version`` no longer hold. ``condensed`` are the ids
    the caller deletes or archives in the same transaction (none for a rebuild);
    ``after`` is the plan on what stays. ``now``: the clock to write with; None
    reads the database's (:func:`recap.db.db_now`), on PostgreSQL inside the
    UPDATE itself (no round trip of its own)."""
    server_clock = on_server_clock(db, now)
    clock = None if server_clock else now or db_now(db)
    flags = blocked_flags(after, settings)
    row = db.execute(_fenced_update(server_clock), {
        "p_sid": session_id, "p_token": token, "p_version": version,
        "p_summary": summary, "p_summary_tokens": summary_tokens,
        "p_n": len(condensed), "p_tokens": condensed_tokens, "p_now": clock,
        "p_enqueue": after.should_summarize,
        "p_needs_escalation": after.needs_escalation,
        "p_normal_blocked": flags.normal_blocked,
        "p_normal_blocked_under": flags.normal_blocked_under}).one_or_none()
    if row is None:
        return None
    return Written(row.summary_version, row.message_count, clock or row.now.astimezone(UTC))


@functools.cache
def _fenced_update(server_clock: bool) -> Update:
    """Built once per clock with bound parameters (``p_*``): building it and its
    cache key on every job cost more CPU than sending it. ``server_clock``:
    PostgreSQL's now() (the transaction's start, what db_now reads) in place of
    ``p_now``, and returned."""
    p = bindparam
    clock = func.now() if server_clock else p("p_now", type_=SESSIONS.c.summary_updated_at.type)
    returning: list[Any] = [SESSIONS.c.summary_version, SESSIONS.c.message_count]
    if server_clock:
        returning.append(clock.label("now"))
    return (update(SESSIONS)
            .where(holds(p("p_sid"), p("p_token"), p("p_version")))
            .values(rolling_summary=p("p_summary"), summary_tokens=p("p_summary_tokens"),
                    summary_version=SESSIONS.c.summary_version + 1,
                    summarized_message_count=SESSIONS.c.summarized_message_count + p("p_n"),
                    message_count=SESSIONS.c.message_count - p("p_n"),
                    active_tokens=SESSIONS.c.active_tokens - p("p_tokens"),
                    summary_updated_at=clock, lease_token=None, lease_expires_at=None,
                    lost_leases=0, blocked_until=None,
                    # The pending marker of the follow-up the plan on what stays needs.
                    enqueued_at=case((p("p_enqueue", type_=Boolean), clock), else_=null()),
                    needs_escalation=p("p_needs_escalation"),
                    normal_blocked=p("p_normal_blocked"),
                    normal_blocked_under=p("p_normal_blocked_under"))
            .returning(*returning))
