"""Helpers shared by the bad-input and security tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.helpers import LOW

worker_thread = pytest.mark.usefixtures("celery_worker_thread")


@pytest.fixture(autouse=True)
def low_thresholds(settings_env: Callable[..., None]) -> None:
    settings_env(**LOW)
