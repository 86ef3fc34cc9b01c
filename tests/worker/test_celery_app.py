"""What a process that loads Recap's Celery app (``celery -A recap worker | beat |
flower``) logs on start: Alembic's per-plugin INFO lines stay out of it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.env import ROOT

pytestmark = pytest.mark.system

# What `celery -A recap flower` does before it serves: logging at INFO, then the
# app and the modules it includes (the tasks, which load recap.migrate and Alembic).
START = """
import logging
logging.basicConfig(level=logging.INFO)
import recap
recap.app.loader.import_default_modules()
import alembic.autogenerate, sys
assert "alembic" in sys.modules
logging.getLogger("alembic.runtime.plugins").warning("a warning still shows")
"""


def test_loading_the_app_logs_no_alembic_plugin_lines() -> None:
    done = subprocess.run([sys.executable, "-c", START], cwd=ROOT, env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "setup plugin" not in done.stderr
    assert "a warning still shows" in done.stderr
