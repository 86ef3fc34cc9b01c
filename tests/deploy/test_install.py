"""Recap installed like a real dependency: the wheel carries the migrations (no
source checkout needed to create the tables), and an app whose own ``models`` or
``worker`` module hides Recap's gets an ImportError that explains it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.env import PG_ADMIN, ROOT, TEST_DB, _admin_execute
from worker.migrate import head_revisions

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_wheel_lists_every_package_of_the_tree() -> None:
    # The package list is explicit (the migrations folder is mapped into it), so a new
    # subpackage must be added there or the wheel would ship without it.
    tree = sorted(".".join(p.parent.relative_to(ROOT).parts)
                  for top in ("worker", "models") for p in (ROOT / top).rglob("__init__.py"))
    listed = PYPROJECT["tool"]["setuptools"]["packages"]
    assert sorted(p for p in listed if p != "worker._migrations") == tree
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {
        "worker._migrations": "migrations"}


def import_in(folder: Path, code: str) -> subprocess.CompletedProcess[str]:
    """``python -c code`` run from ``folder`` (first on sys.path, as for an app's script)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120)


def test_an_apps_own_models_module_gets_an_explaining_import_error(tmp_path: Path) -> None:
    (tmp_path / "models.py").write_text("class Message:\n    pass\n")
    done = import_in(tmp_path, "from worker import add_message")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: Recap cannot load its package 'models' "
                           f"({ROOT / 'models'}): the name resolves to "
                           f"{tmp_path / 'models.py'}, "), last
    assert "rename that module" in last and "over HTTP (`recap serve`)" in last
    # Without the app's module in the way, the same import works.
    (tmp_path / "models.py").unlink()
    assert import_in(tmp_path, "from worker import add_message").returncode == 0


def test_an_apps_own_worker_module_gets_an_explaining_import_error(tmp_path: Path) -> None:
    (tmp_path / "worker").mkdir()
    (tmp_path / "worker" / "__init__.py").write_text("")
    done = import_in(tmp_path, "import models")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: Recap cannot load its package 'worker' "
                           f"({ROOT / 'worker'}): the name resolves to "
                           f"{tmp_path / 'worker' / '__init__.py'}, "), last
    assert "rename that module" in last and "over HTTP (`recap serve`)" in last


@pytest.fixture
def fresh_postgres() -> Iterator[str]:
    name = f"{TEST_DB}_wheel"
    _admin_execute(f'DROP DATABASE IF EXISTS "{name}"')
    _admin_execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    finally:
        _admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run(argv: list[str], *, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, f"{argv}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
def test_the_wheel_migrates_and_runs_the_demo_outside_the_checkout(
        tmp_path: Path, fresh_postgres: str) -> None:
    # Build from a copy of exactly what the wheel is made of (no build/ in the checkout).
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("worker", "models", "migrations"):
        shutil.copytree(ROOT / name, source / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    base = {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "DATABASE_URL", "CELERY_BROKER_URL",
                         "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "RECAP_ENV")}
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist),
         str(source)], cwd=tmp_path, env=base)
    [wheel] = dist.glob("recap-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    # No top-level name beyond Recap's two packages: an app's own `migrations` (or
    # anything else) cannot collide with the wheel.
    assert {n.split("/")[0] for n in names} == {"worker", "models",
                                                "recap-0.1.0.dist-info"}
    assert "worker/_migrations/env.py" in names and "worker/_migrations/script.py.mako" in names

    # A fresh virtualenv outside the repository; pip takes the dependencies from its
    # configured index or cache.
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=base)
    python, recap = str(venv / "bin" / "python"), str(venv / "bin" / "recap")
    run([python, "-m", "pip", "install", "--quiet", str(wheel)], cwd=tmp_path, env=base)

    work = tmp_path / "work"  # no checkout, no alembic.ini; an app's own migrations
    (work / "migrations").mkdir(parents=True)
    (work / "migrations" / "__init__.py").write_text("")
    (work / "migrations" / "env.py").write_text("raise SystemExit('the app migrations ran')\n")
    env = {**base, "DATABASE_URL": fresh_postgres}
    where = run([python, "-c", "import worker, models, worker._migrations as m; "
                 "print(worker.__file__, models.__file__, *m.__path__, sep='\\n')"],
                cwd=work, env=env)
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    assert all(Path(line).is_relative_to(site) for line in where.split()), where
    head = ", ".join(head_revisions())
    # From the app's folder, first on sys.path: Recap's migrations run, not the app's.
    upgrade = "import sys; from worker.cli import main; sys.exit(main(['db', 'upgrade']))"
    assert run([python, "-c", upgrade], cwd=work, env=env).endswith(
        f": upgraded from no revision (empty) to {head}\n")
    assert run([recap, "db", "check"], cwd=work, env=env).endswith(f"({head})\n")
    out = run([recap, "demo"], cwd=work, env=env)
    assert "a summary was applied" in out
    assert [p.name for p in work.iterdir()] == ["migrations"]  # the demo cleaned up
