"""A total wall-clock deadline for one Messages API call, in every worker pool.

The SDK's ``timeout`` bounds each socket read, not the call: a server or proxy
that trickles its answer a byte at a time never lets a read time out, and holds
the call (the job, its worker slot and its lease) for as long as it keeps
sending. Celery's soft time limit is a signal, so it only fires in the prefork
pool's children, and only after minutes. :func:`call_within` bounds the whole
call instead: it runs on a helper thread, and the caller waits at most
``seconds`` for it, whichever pool it runs in (prefork, threads, solo).

An overrun is a :class:`~recap.errors.TransientLLMError` whose message says
"Timeout" and "total deadline" (the next attempt may meet a healthy server).
The abandoned call keeps its helper thread until the server finishes or a read
times out; it has nobody left to hand its answer to.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

from recap.errors import TransientLLMError

T = TypeVar("T")


def call_within(fn: Callable[[], T], seconds: float, *, what: str = "LLM call") -> T:
    """``fn()``'s result, or TransientLLMError once ``seconds`` have passed.

    ``fn`` runs on a daemon thread with the caller's context variables (the
    trace goes along); what it raises is raised here. The caller's own wait can
    still be interrupted (Celery's soft time limit raises in the waiting thread).
    """
    done = threading.Event()
    outcome: list[T] = []
    failure: list[BaseException] = []
    context = contextvars.copy_context()

    def run() -> None:
        try:
            outcome.append(context.run(fn))
        except BaseException as exc:  # handed to the caller, re-raised there
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name="recap-llm-call", daemon=True).start()
    if not done.wait(seconds):
        raise TransientLLMError(f"Timeout: {what} did not finish within its total deadline "
                                f"of {seconds:g}s (RECAP_LLM_TIMEOUT_S); the server was slow "
                                "or trickled its answer")
    if failure:
        raise failure[0]
    return outcome[0]
