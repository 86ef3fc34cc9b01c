"""One ``recap serve`` per module (real uvicorn on a free port) against the test
PostgreSQL and Redis, with low thresholds so a short conversation is summarized.
Jobs it queues run in the in-process worker (``celery_worker_thread``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import LOW
from tests.http.server import Server

# Small enough that a 413 needs no large upload.
MAX_BODY = 64 * 1024
SERVER_ENV: dict[str, object] = {**LOW, "RECAP_API_MAX_BODY_BYTES": MAX_BODY}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(log_dir=Path(tmp_path_factory.mktemp("serve")), env=SERVER_ENV).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def api(server: Server) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


@pytest.fixture
def low(settings_env: object) -> None:
    """The in-process worker's thresholds equal to the server's."""
    assert callable(settings_env)
    settings_env(**LOW)
