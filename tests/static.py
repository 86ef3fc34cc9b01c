"""``python -m tests.static [layers|types]``: the static checks CI runs on the package
as it installs: import-linter's contracts (pyproject.toml) and mypy.

The repository's ``worker/`` folder is the package ``recap`` and ``models/`` is
``recap.models`` (setuptools' package-dir). Neither tool follows that mapping
(import-linter reads one directory per root package; mypy does not run the
editable install's import hook), so both run on a copy laid out as the wheel lays
it out, under ``build/static`` (mypy's cache stays warm between runs); paths in
mypy's report are given back as the repository's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAGE = ROOT / "build" / "static"
LAYOUT = {"worker": "recap", "models": "recap/models", "tests": "tests", "bench": "bench"}


def stage() -> Path:
    """A fresh copy of the tree in the installed layout; returns its root."""
    if STAGE.exists():
        shutil.rmtree(STAGE / "recap", ignore_errors=True)
        for folder in ("tests", "bench"):
            shutil.rmtree(STAGE / folder, ignore_errors=True)
    for folder, target in LAYOUT.items():
        shutil.copytree(ROOT / folder, STAGE / target, copy_function=shutil.copy2,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(ROOT / "pyproject.toml", STAGE / "pyproject.toml")
    return STAGE


def layers(root: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(root)}  # ahead of the editable install
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import "
                           "lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"],
                          cwd=root, env=env, check=False).returncode


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


def main(argv: list[str]) -> int:
    checks = {"layers": layers, "types": types}
    chosen = argv or list(checks)
    unknown = [name for name in chosen if name not in checks]
    if unknown:
        print(f"usage: python -m tests.static [{'|'.join(checks)}] (not {unknown})")
        return 2
    root = stage()
    return max(checks[name](root) for name in chosen)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
