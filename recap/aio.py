"""The asyncio API: the same calls as ``recap``'s, as coroutines (``recap-worker[asyncio]``).

``from recap import aio`` then ``await aio.add_message(...)``, ``await
aio.after_reply(...)``, ``await aio.build_context(...)``, ``await
aio.session(...)``; ``await aio.warm_up()`` at start-up, ``await aio.close()``
at shutdown. Needs the ``asyncio`` extra (``pip install
'recap-worker[asyncio]'``).
"""

from __future__ import annotations

import asyncio

from recap.api.aio import (
    Context,
    add_message,
    after_reply,
    as_request,
    build_context,
    close,
    transaction,
    warm_up,
)
from recap.sessions import view
from recap.sessions.view import SessionView

__all__ = ["Context", "add_message", "after_reply", "as_request", "build_context", "close",
           "session", "transaction", "warm_up"]


async def session(session_id: str) -> SessionView:
    """``recap.session``: the session as a whole, read in one transaction in a thread
    (off the event loop). Raises InvalidInput, SessionNotFound."""
    return await asyncio.to_thread(view.session, session_id)

