"""A tiny soak (bench/soak.py) in CI: faults, one SIGKILL, and nothing lost or doubled."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from bench.soak import SOAK_SETTINGS, SoakConfig, run_soak


def test_quick_soak_loses_nothing(settings_env: Callable[..., None], tmp_path: Path) -> None:
    settings_env(**SOAK_SETTINGS)
    cfg = SoakConfig(sessions=4, messages=40, workers=2, concurrency=2, kill_every=1.0,
                     min_kills=1, max_kills=1, api_latency=0.1, drain_timeout=180)
    result = run_soak(cfg, queue=f"recap-soak-ci-{uuid.uuid4().hex[:8]}", log_dir=tmp_path)
    assert result.problems == []
    assert result.messages_written == 160
    assert result.messages_lost == 0 and result.duplicate_applies == 0
    assert result.worker_kills == 1
    assert result.summaries_applied > 0
