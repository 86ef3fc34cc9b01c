"""Fixtures shared by the ``recap`` command tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.cli.common import idle
from tests.helpers import LOW, wait_for


@pytest.fixture
def low(settings_env: Callable[..., None]) -> None:
    """Small thresholds: 12 seeded messages trigger exactly one 5-message batch."""
    settings_env(**LOW)


@pytest.fixture
def worker_idle(celery_worker_thread: object) -> Iterator[None]:
    """The in-process worker runs queued jobs; the test ends only once they are done."""
    yield
    wait_for(idle, what="every queued job to finish")
