"""Progress of long work, for whoever shows it: work that takes steps (the
summarizer's chunks, one model call each) reports them here, and a listener set
for the current context (a ``recap`` command on a terminal) hears them. With no
listener, a report costs one context-variable read; nothing is printed or logged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

# (what, steps done, steps in all)
Listener = Callable[[str, int, int], None]

_LISTENER: ContextVar[Listener | None] = ContextVar("recap_progress", default=None)


def report(what: str, *, done: int, total: int) -> None:
    """Tell the current listener, if any, that ``done`` of ``total`` steps of
    ``what`` are done."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(what, done, total)


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send the reports made in this context (and threads started with a copy of
    it) to ``listener`` until the block ends."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)
