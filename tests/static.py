"""``python -m tests.static``: mypy on the package as it installs.

The repository's ``worker/`` folder is the package ``recap`` (setuptools'
package-dir; ``worker/models`` links to ``models/``, which installs as
``recap.models``). mypy does not run the editable install's import hook, so it
checks a copy laid out as the wheel lays it out, under ``build/static`` (its
cache stays warm between runs); paths in its report are given back as the
repository's. import-linter reads the tree itself: run ``lint-imports``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAGE = ROOT / "build" / "static"
LAYOUT = {"worker": "recap", "tests": "tests", "bench": "bench"}  # folder -> where it installs


def stage() -> Path:
    """A fresh copy of the tree in the installed layout; returns its root."""
    for target in LAYOUT.values():
        shutil.rmtree(STAGE / target, ignore_errors=True)
    for folder, target in LAYOUT.items():
        shutil.copytree(ROOT / folder, STAGE / target,  # worker/models is followed
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(ROOT / "pyproject.toml", STAGE / "pyproject.toml")
    return STAGE


def types(root: Path) -> int:
    env = {**os.environ, "PYTHONPATH": "", "MYPYPATH": str(root)}
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir",
                           str(ROOT / ".mypy_cache" / "static"), "-p", "recap", "-p", "tests",
                           "-p", "bench"], cwd=root, env=env, capture_output=True, text=True,
                          check=False)
    for line in (done.stdout + done.stderr).splitlines():
        if line.startswith("recap/models/"):
            line = "models/" + line.removeprefix("recap/models/")
        elif line.startswith("recap/"):
            line = "worker/" + line.removeprefix("recap/")
        print(line)
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(types(stage()))
