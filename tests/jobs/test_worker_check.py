"""The worker makes one cheap call at start and logs, once, which of the model name
and the key is wrong; with both right it says nothing. A real ``celery -A recap
worker`` subprocess against the stand-in."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from recap.testing import FakeAnthropic, error
from tests.env import API_KEY, ROOT
from tests.jobs.test_worker_start import START_TIMEOUT_S, worker_cmd, worker_env

pytestmark = pytest.mark.system

WARNING = "recap check at worker start:"


def start_log(env: dict[str, str]) -> str:
    """The worker's output up to ' ready.' (then it is stopped)."""
    proc = subprocess.Popen(worker_cmd(env), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # ends when the process exits
            seen.append(line)
            if " ready." in line:
                break
        else:
            pytest.fail("the worker exited at start:\n" + "".join(seen))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # Celery's warm shutdown
        try:
            proc.wait(START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    return "".join(seen)


def test_a_wrong_model_name_is_a_warning_at_start_naming_the_model(
        fake_api: FakeAnthropic) -> None:
    fake_api.script(error(404, "model: claude-typo-1"))
    log = start_log(worker_env(RECAP_CHECK_AT_START="true", RECAP_MODEL="claude-typo-1"))
    assert log.count(WARNING) == 1, log
    line = next(x for x in log.splitlines() if WARNING in x)
    assert "model is wrong or unproven: model 'claude-typo-1' was not found" in line
    assert API_KEY not in log
    assert len(fake_api.requests) == 1 and fake_api.requests[0]["max_tokens"] == 1


def test_a_refused_key_is_a_warning_at_start_naming_the_key(fake_api: FakeAnthropic) -> None:
    fake_api.script(error(401, "invalid x-api-key"))
    log = start_log(worker_env(RECAP_CHECK_AT_START="true"))
    assert log.count(WARNING) == 1, log
    assert "key is wrong or unproven: the API key was refused" in log


def test_a_working_model_and_key_start_quietly(fake_api: FakeAnthropic) -> None:
    log = start_log(worker_env(RECAP_CHECK_AT_START="true"))
    assert WARNING not in log
    assert len(fake_api.requests) == 1  # the one check, nothing more
