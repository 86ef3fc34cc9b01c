"""The asyncio API: the same calls as ``recap``'s, as coroutines (``recap-worker[asyncio]``).

``from recap import aio`` then ``await aio.add_message(...)``, ``await
aio.after_reply(...)``, ``await aio.build_context(...)``, ``await
aio.session(...)``, ``await aio.recall(...)``, ``await aio.recall_tool(...)``;
``await aio.warm_up()`` at start-up, ``await aio.close()``
at shutdown. Needs the ``asyncio`` extra (``pip install
'recap-worker[asyncio]'``).
"""

from __future__ import annotations

import asyncio

from recap.api import recall as recall_api
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
from recap.api.recall import DEFAULT_TOKENS, Recalled
from recap.api.recall_tool import arecall_tool as recall_tool
from recap.sessions import view
from recap.sessions.view import SessionView

__all__ = ["Context", "add_message", "after_reply", "as_request", "build_context", "close",
           "recall", "recall_tool", "session", "transaction", "warm_up"]


async def session(session_id: str) -> SessionView:
    """``recap.session``: the session as a whole, read in one transaction in a thread
    (off the event loop). Raises InvalidInput, SessionNotFound."""
    return await asyncio.to_thread(view.session, session_id)



async def recall(session_id: str, *, message_id: int | None = None,
                 tool_use_id: str | None = None, query: str | None = None,
                 max_tokens: int = DEFAULT_TOKENS) -> list[Recalled]:
    """``recap.recall``: the archived original (or the matching passages), read in a
    thread (off the event loop; the tenant scope goes with it). Raises InvalidInput,
    SessionNotFound, ArchivedMessageNotFound."""
    return await asyncio.to_thread(recall_api.recall, session_id, message_id=message_id,
                                   tool_use_id=tool_use_id, query=query,
                                   max_tokens=max_tokens)
