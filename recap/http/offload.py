"""Routes are coroutines that run their sync Recap call in a worker thread, in
one hop, and answer with JSON serialized there too.

FastAPI runs a plain ``def`` route in its thread pool and then, for its
``response_model``, goes to the pool a second time to validate the answer: two
hops per request. A coroutine route that awaits :func:`in_thread` and returns a
ready :class:`~starlette.responses.Response` makes one, on a plain thread pool
(lighter than anyio's, which FastAPI uses): the event loop never waits for the
database or the broker, and does no serializing.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from pydantic import BaseModel
from starlette.responses import Response

T = TypeVar("T")

# Calls running at once: as many as FastAPI's own thread pool allows.
MAX_THREADS = 40


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(MAX_THREADS, thread_name_prefix="recap-http")


async def in_thread(call: Callable[[], T]) -> T:
    """``call()`` in a worker thread, with this task's context variables."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_pool(), context.run, call)


def json_response(model: BaseModel, *, status_code: int = 200,
                  headers: Mapping[str, str] | None = None) -> Response:
    """``model`` as the JSON body FastAPI would send for it as a ``response_model``."""
    return Response(model.model_dump_json().encode(), status_code=status_code,
                    headers=headers, media_type="application/json")
