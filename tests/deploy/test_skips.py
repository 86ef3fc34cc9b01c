"""README's test command on a machine without a tool: the test that needs it is
reported as skipped with its reason, and CI's RECAP_TEST_NO_SKIP=1 turns that skip
into a failure. Checked on the Chromium test, in a pytest run of its own whose
PATH holds no chromium."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.env import ROOT
from tests.helpers import NO_SKIP_ENV

pytestmark = pytest.mark.system

BROWSER_TEST = "tests/deploy/test_flower_browser.py"


def pytest_without_chromium(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if k not in (NO_SKIP_ENV, "PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST")}
    # Only the virtualenv's own scripts: no chromium anywhere on this PATH.
    clean["PATH"] = str(Path(sys.executable).parent)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-n", "0", "-p",
                           "no:cacheprovider", BROWSER_TEST], cwd=ROOT, env={**clean, **env},
                          capture_output=True, text=True, timeout=300)


def test_without_chromium_the_browser_test_skips_with_its_reason() -> None:
    done = pytest_without_chromium()
    assert done.returncode == 0, done.stdout[-3000:]
    assert "skipped" in done.stdout and "failed" not in done.stdout
    assert "SKIPPED" in done.stdout and "Debian's chromium is not installed" in done.stdout


def test_in_ci_mode_the_same_skip_is_a_failure() -> None:
    done = pytest_without_chromium(**{NO_SKIP_ENV: "1"})
    assert done.returncode != 0
    assert "Debian's chromium is not installed" in done.stdout
    assert f"{NO_SKIP_ENV} is set: this run may not skip" in done.stdout
