"""The broker connections the reply path publishes on: a few kept open per process.

Opening a connection to the broker for each job costs the calling thread about
2 ms of CPU (a socket, a handshake, a channel, the queue declared again); a
connection kept open publishes in a fraction of that. On a process that also
runs a worker, that CPU is taken from the interpreter the jobs share, so the
saving shows twice.

The pool holds at most :data:`POOL_SIZE` connections, each made without retries
(the reply path never waits on a broker that is down: a failed publish trips the
caller's breaker). A connection whose publish failed is closed, not handed out
again. When every pooled connection is busy for longer than :data:`WAIT_S`, the
publish uses a connection of its own, as without the pool. A forked child (a
web server's workers) starts a pool of its own and never touches its parent's
sockets; so does a process whose broker URL changed.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from kombu.exceptions import LimitExceeded

# Connections kept per process: about the number of threads that publish at once.
POOL_SIZE = 8
# How long a publish waits for a pooled connection before opening its own.
WAIT_S = 0.05
# kombu retries a connection for broker_connection_timeout unless told not to.
NO_RETRIES = {"max_retries": 0}


class Publisher:
    """The process's pool of broker connections, built on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: Any = None
        self._key: tuple[int, str] | None = None

    def pool(self, app: Any) -> Any:
        """The pool for this process and ``app``'s broker (a new one after a fork or
        a change of broker URL)."""
        key = (os.getpid(), str(app.conf.broker_write_url or app.conf.broker_url))
        with self._lock:
            if self._key != key:
                old, inherited = self._pool, self._key is not None and self._key[0] != key[0]
                base = app.connection_for_write(transport_options=NO_RETRIES)
                self._pool, self._key = base.Pool(limit=POOL_SIZE), key
                if old is not None and not inherited:
                    old.force_close_all()  # a parent's sockets stay the parent's
            return self._pool

    @contextlib.contextmanager
    def connection(self, app: Any) -> Iterator[Any]:
        """A connection to ``app``'s broker: a pooled one, or, when all are busy,
        one of its own. One that raised is closed."""
        pool = self.pool(app)
        try:
            conn = pool.acquire(block=True, timeout=WAIT_S)
        except LimitExceeded:
            with app.connection_for_write(transport_options=NO_RETRIES) as own:
                yield own
            return
        try:
            yield conn
        except BaseException:
            pool.replace(conn)
            raise
        conn.release()


PUBLISHER = Publisher()
