"""The asyncio API: the same calls as ``recap``'s, as coroutines (``recap-worker[asyncio]``).

``from recap import aio`` then ``await aio.add_message(...)``, ``await
aio.after_reply(...)``, ``await aio.build_context(...)``; ``await aio.close()`` at
shutdown. Needs the ``asyncio`` extra (``pip install 'recap-worker[asyncio]'``).
"""

from recap.api.aio import (
    Context,
    add_message,
    after_reply,
    as_request,
    build_context,
    close,
    transaction,
)

__all__ = ["Context", "add_message", "after_reply", "as_request", "build_context", "close",
           "transaction"]
