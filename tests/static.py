"""``python -m tests.static``: mypy on the package, the tests and the benchmarks,
read from the tree as it is (the folder ``recap/`` is the package)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def types() -> int:
    return subprocess.run([sys.executable, "-m", "mypy", "-p", "recap", "-p", "tests",
                           "-p", "bench"], cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(types())
