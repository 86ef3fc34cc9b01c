"""``recap.warm_up()``: pay the reply path's one-time costs when the app starts,
not on a user's first reply.

Everything the reply path uses loads on first use, so ``import recap`` stays
cheap; the price is a first reply that loads it: without a warm-up a process's
first ``after_reply`` costs tens of milliseconds more than later ones, and the
first that queues a job hundreds (Celery, kombu and the broker's transport load
then). ``recap bench --only coldstart`` measures both, with and without.
"""

from __future__ import annotations

import logging

from recap.api.context import read_window
from recap.api.core import NewMessage, validate_message
from recap.api.ingest import add_message, decide
from recap.api.window import assemble_window
from recap.core.tenant import current_tenant
from recap.core.validate import MAX_SESSION_ID
from recap.db import autocommit_connection, session_factory
from recap.llm.tokens import count_tokens, message_tokens
from recap.settings import get_settings
from recap.store.enqueue import warm_publisher

log = logging.getLogger("recap.warm")

# The id of the rehearsed reply, whose transaction is rolled back. The hook's read,
# which marks what it finds, reads an id no session can have (longer than any
# stored one).
PROBE_SESSION = "recap-warm-up"
UNSTORED_SESSION = "recap-warm-up-" + "-" * MAX_SESSION_ID


def warm_up() -> None:
    """Load what ``add_message``, ``after_reply`` and ``build_context`` use, so the
    first reply is as fast as later ones: the settings, the database engine (the
    schema checked, a pooled connection opened), the tokenizer, one reply
    rehearsed on an id of its own in a transaction that is rolled back (nothing
    is stored), and the Celery app with a broker connection opened and closed
    (nothing is published).

    Call it once at start-up (FastAPI's lifespan, a WSGI app's factory). Raises
    ConfigError for bad settings and DatabaseNotReady for a database that is
    unreachable or not migrated, as the first call would; a broker that cannot
    be reached is logged as a warning, since the reply path never fails for one.
    """
    settings = get_settings()
    probe = probe_id()
    with session_factory()() as s:
        try:
            add_message(probe, "user", "Warm up: what is planned for March 14th?", db=s)
            assemble_window("", read_window(probe, db=s), settings=settings,
                            count=count_tokens)
        finally:
            s.rollback()
    with autocommit_connection() as conn:
        decide(conn, UNSTORED_SESSION)  # no such session: the read alone, nothing marked
    try:
        warm_publisher()
    except Exception as exc:  # the first publish logs it too; the sweeper catches up
        log.warning("warm_up: the broker could not be reached (%s: %s); jobs are queued "
                    "once it is back", type(exc).__name__, exc)


def probe_id() -> str:
    """The rehearsal's session id, inside the current tenant's ids if calls are
    scoped to one (recap.tenant)."""
    scope = current_tenant()
    return PROBE_SESSION if scope is None else f"{scope}/{PROBE_SESSION}"


def probe_message(max_inline_chars: int) -> NewMessage:
    """The message the asyncio warm-up rehearses storing (validated and counted)."""
    probe = probe_id()
    msg = validate_message(probe, "user", "warm up", pinned=False, user_id=None,
                           max_inline_chars=max_inline_chars)
    return NewMessage(probe, "user", msg, message_tokens(msg))
