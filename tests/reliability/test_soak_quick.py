"""Tiny soaks (tests/reliability/soak) in CI: faults, one SIGKILL, a Redis restart, lossy model
output, and nothing lost or doubled."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.reliability.soak.faults import SOAK_SETTINGS, SoakRedis, forget_broker_connections
from tests.reliability.soak.run import SoakConfig, run_soak

pytestmark = pytest.mark.system


def _queue() -> str:
    return f"recap-soak-ci-{uuid.uuid4().hex[:8]}"


def test_quick_soak_loses_nothing(settings_env: Callable[..., None], tmp_path: Path) -> None:
    settings_env(**SOAK_SETTINGS)
    cfg = SoakConfig(sessions=4, messages=40, workers=2, concurrency=2, kill_every=1.0,
                     min_kills=1, max_kills=1, api_latency=0.1, drain_timeout=180)
    result = run_soak(cfg, queue=_queue(), log_dir=tmp_path)
    assert result.problems == []
    assert result.messages_written == 160
    assert result.messages_lost == 0 and result.duplicate_applies == 0
    assert result.worker_kills == 1
    assert result.summaries_applied > 0


def test_quick_soak_with_a_lossy_model_keeps_every_specific(
        settings_env: Callable[..., None], tmp_path: Path) -> None:
    """The fake drops half the specifics of every summary, fact and repair
    answer; with faults and a SIGKILL, the retention guard still keeps them all."""
    settings_env(**SOAK_SETTINGS)
    cfg = SoakConfig(sessions=3, messages=40, workers=2, concurrency=2, kill_every=1.0,
                     min_kills=1, max_kills=1, api_latency=0.1, drain_timeout=180,
                     lossy_specifics=0.5)
    result = run_soak(cfg, queue=_queue(), log_dir=tmp_path)
    assert result.problems == []
    assert result.specifics_planted >= 4 * 120 and result.specifics_lost == 0
    assert result.summaries_applied > 0


@pytest.fixture
def soak_redis(settings_env: Callable[..., None], tmp_path: Path) -> Iterator[SoakRedis]:
    """A redis-server of this test's own, as this process's and the workers' broker."""
    server = SoakRedis(tmp_path / "redis.log")
    server.start()
    settings_env(**SOAK_SETTINGS, CELERY_BROKER_URL=server.url)
    forget_broker_connections()
    yield server
    server.kill()
    forget_broker_connections()  # settings_env restores the URL after this fixture


def test_quick_soak_survives_redis_restarts(soak_redis: SoakRedis, tmp_path: Path) -> None:
    cfg = SoakConfig(sessions=4, messages=40, workers=2, concurrency=2, kill_every=0,
                     api_latency=0.1, drain_timeout=180, redis_restart_every=60)
    result = run_soak(cfg, queue=_queue(), log_dir=tmp_path, redis_server=soak_redis)
    assert result.problems == []
    assert result.messages_lost == 0 and result.duplicate_applies == 0
    assert result.redis_restarts == 2
    assert result.worker_restarts == 0  # the workers reconnected by themselves
    assert result.worker_reconnects >= 2 * result.redis_restarts
    assert result.summaries_applied > 0


def test_quick_soak_with_lossy_answers(settings_env: Callable[..., None],
                                       tmp_path: Path) -> None:
    settings_env(**SOAK_SETTINGS)
    cfg = SoakConfig(sessions=4, messages=40, workers=2, concurrency=2, kill_every=0,
                     fail_rate=0.1, api_latency=0.05, drain_timeout=180, lossy_rate=0.5)
    result = run_soak(cfg, queue=_queue(), log_dir=tmp_path)
    assert result.problems == []  # includes: no run failed storing model output
    assert result.messages_lost == 0 and result.duplicate_applies == 0
    lossy = {k: n for k, n in result.injected_faults.items()
             if k not in ("transient", "permanent")}
    assert any(k.startswith("summary_") for k in lossy), lossy
    assert result.summaries_applied > 0
