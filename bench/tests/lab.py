"""Running the lab as ``python -m bench`` does: in a process of its own, with none
of the caller's Recap, database, broker or API settings, so nothing a benchmark
configures (settings, the Celery app's queues, engines) reaches the tests after it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The caller's settings a benchmark process must not inherit.
OWN_SETTINGS = ("RECAP_", "DATABASE_URL", "CELERY_", "ANTHROPIC_")

RUN = """
{imports}
from recap.bench.harness import env as benv
benv.setup(0.0)
try:
    print({call})
finally:
    benv.teardown()
"""


def clean_env() -> dict[str, str]:
    """This process's environment without the settings a benchmark sets for itself."""
    return {k: v for k, v in os.environ.items() if not k.startswith(OWN_SETTINGS)}


def run_on_own_bench(imports: str, call: str, *,
                     timeout: float) -> subprocess.CompletedProcess[str]:
    """Print ``call`` (after ``imports``) in a process of its own, on the bench's own
    database, queue and stand-in (``benv.setup``), from the checkout's root."""
    return subprocess.run([sys.executable, "-c", RUN.format(imports=imports, call=call)],
                          cwd=ROOT, env=clean_env(), capture_output=True, text=True,
                          timeout=timeout)
