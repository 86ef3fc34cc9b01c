"""Recap installed like a real dependency, beside an app: one import package
(``recap``) and nothing else at the top level, so an app's own ``models.py``,
``worker.py``, ``settings.py``, ``migrations/`` or ``tests/`` never meets Recap's;
the wheel carries the migrations (no source checkout needed to create the tables),
and they share a database with the app's own Alembic history."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tomllib
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from recap.migrate import head_revisions
from tests.deploy.app_history import APP_HEAD, write_app_history
from tests.env import PG_ADMIN, ROOT, RUN_ID, TEST_DB, _admin_execute, claim_services
from tests.helpers import free_port, wait_for

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_folder_is_the_package() -> None:
    # No package-dir mapping: the wheel finds every package under recap/ as the
    # tree has it, so editors and static tools read the same names the code imports.
    setuptools = PYPROJECT["tool"]["setuptools"]
    assert "package-dir" not in setuptools
    assert setuptools["packages"] == {"find": {"include": ["recap", "recap.*"]}}
    assert not any(p.is_symlink() for p in (ROOT / "recap").rglob("*"))
    assert PYPROJECT["project"]["name"] == "recap-worker"


def test_no_backup_or_merge_leftover_is_committed() -> None:
    # *.orig and *.rej are what a failed patch or merge leaves; ~ and .bak are editors'.
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    assert [f for f in files
            if f.endswith((".orig", ".rej", ".bak", "~", ".swp"))] == []


def import_in(folder: Path, code: str) -> subprocess.CompletedProcess[str]:
    """``python -c code`` run from ``folder`` (first on sys.path, as for an app's script)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120)


def app_folder(root: Path) -> Path:
    """An app's directory with the module names apps have, none of them Recap's, and
    its own Alembic history (alembic.ini, migrations/: tests/deploy/app_history.py)."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("models", "worker", "settings"):
        (root / f"{name}.py").write_text(f"OWNER = 'the app'\nNAME = {name!r}\n")
    write_app_history(root)
    (root / "migrations" / "__init__.py").write_text("")
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "test_app.py").write_text(
        "import models, settings, worker\n"
        "from recap import add_message, build_context\n\n\n"
        "def test_both_are_importable():\n"
        "    assert models.OWNER == worker.OWNER == settings.OWNER == 'the app'\n"
        "    assert callable(add_message) and callable(build_context)\n")
    return root


def test_an_apps_own_modules_do_not_meet_recaps(tmp_path: Path) -> None:
    app = app_folder(tmp_path / "app")
    done = import_in(app, "import models, worker, settings, recap\n"
                          "from recap import add_message, build_context\n"
                          "from recap.models import Base\n"
                          "print(models.OWNER, worker.OWNER, settings.OWNER, Base.__name__)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["the", "app"] * 3 + ["Base"]
    assert done.stderr == ""


def test_an_apps_own_recap_module_is_named_by_the_command(tmp_path: Path) -> None:
    (tmp_path / "recap.py").write_text("X = 1\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", "import sys; from recap.cli import main; "
                           "sys.exit(main(['tokenizer']))"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    # python -c puts the app's folder first: its recap.py is what `recap` names.
    assert done.returncode != 0
    recap_cli = shutil.which("recap", path=str(Path(sys.executable).parent))
    assert recap_cli is not None
    done = subprocess.run([recap_cli, "tokenizer"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    line = f"recap: warning: {tmp_path / 'recap.py'} hides Recap's package `recap`"
    assert line in done.stderr, done.stderr
    assert "rename it" in done.stderr and "recap serve" in done.stderr


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


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


ADD_AND_WAIT = """
import sys, time
from recap import add_message, after_reply, build_context
sid = "deploy-" + sys.argv[1]
for i in range(12):
    add_message(sid, "user", f"Question {i}: where is order A-{1000 + i} now? I placed it "
                "with express shipping to the Lisbon office and the tracking page has "
                "not changed since Monday morning, which worries the whole team.")
    add_message(sid, "assistant", f"Order A-{1000 + i} left the depot on day {i}; the "
                "carrier scans it again at the Lisbon hub, usually within a day, and "
                "the tracking page updates after that scan.")
    after_reply(sid)
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    if len(build_context(sid, system_prompt="You help.")["messages"]) < 24:
        print("summary applied")
        break
    time.sleep(0.3)
"""


@pytest.mark.slow
def test_the_wheel_runs_beside_an_app_with_its_own_modules(
        tmp_path: Path, fresh_postgres: str) -> None:
    # Build from a copy of exactly what the wheel is made of (no build/ in the checkout).
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("recap",):
        shutil.copytree(ROOT / name, source / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("RECAP_", "DATABASE_URL", "CELERY_", "ANTHROPIC_", "PYTHON"))}
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist),
         str(source)], cwd=tmp_path, env=base)
    [wheel] = dist.glob("recap_worker-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    # One top-level name: an app's own worker, models, migrations (or anything else)
    # cannot collide with the wheel.
    assert {n.split("/")[0] for n in names} == {"recap", "recap_worker-0.1.0.dist-info"}
    for name in ("recap/migrations/env.py", "recap/migrations/script.py.mako",
                 "recap/models/tables.py", "recap/testing/__main__.py",
                 "recap/llm/prompts/default.txt", "recap/bench/__main__.py",
                 "recap/bench/harness/env.py", "recap/demo/conversation.json"):
        assert name in names, name

    # A fresh virtualenv outside the repository; pip takes the dependencies from its
    # configured index or cache.
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=base)
    bin_ = venv / "bin"
    python, recap = str(bin_ / "python"), str(bin_ / "recap")
    run([python, "-m", "pip", "install", "--quiet", f"{wheel}[server]", "pytest"],
        cwd=tmp_path, env=base)

    app = app_folder(tmp_path / "app")
    stand_in_port, api_port = free_port(), free_port()
    env = {**base, "DATABASE_URL": fresh_postgres, "CELERY_BROKER_URL": claim_services(),
           "RECAP_QUEUE": f"recap-deploy-{RUN_ID}", "RECAP_ENV": "test",
           "ANTHROPIC_API_KEY": "sk-ant-deploy-test",
           "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{stand_in_port}",
           "RECAP_POLICY": "threshold", "RECAP_TRIGGER_MESSAGES": "10",
           "RECAP_TRIGGER_TOKENS": "100", "RECAP_BATCH_SIZE": "5", "RECAP_KEEP_RECENT": "4",
           "RECAP_CHECK_AT_START": "false", "RECAP_TITLES_ENABLED": "false",
           "TIKTOKEN_CACHE_DIR": os.environ.get("TIKTOKEN_CACHE_DIR", "")}
    where = run([python, "-c", "import recap, recap.models as m, recap.migrations as g; "
                 "print(recap.__file__, m.__file__, *g.__path__, sep='\\n')"], cwd=app, env=env)
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    assert all(Path(line).is_relative_to(site) for line in where.split()), where

    head = ", ".join(head_revisions())
    alembic = str(bin_ / "alembic")  # the app's Alembic: the one Recap depends on
    left_alone = (f": alembic_version belongs to another Alembic history (revision "
                  f"{APP_HEAD}), not Recap's: left alone\n")
    # The app's own history, then Recap's, from the app's folder: `recap db upgrade`
    # runs Recap's migrations (not the app's migrations/) and leaves the app's revision.
    run([alembic, "upgrade", "head"], cwd=app, env=env)
    upgraded = run([recap, "db", "upgrade"], cwd=app, env=env)
    assert upgraded.endswith(f": upgraded from no revision (empty) to {head}\n")
    assert left_alone in upgraded
    assert run([alembic, "current"], cwd=app, env=env) == f"{APP_HEAD} (head)\n"
    assert run([python, "-c", "from recap import add_message, build_context"],
               cwd=app, env=env) == ""
    # The app's own test suite, its tests/ beside Recap's installed package.
    assert "1 passed" in run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "tests"], cwd=app, env=env)
    bench_runs(recap, app=app, env=env)

    procs: list[subprocess.Popen[str]] = []

    def spawn(*argv: str) -> subprocess.Popen[str]:
        log = (tmp_path / f"{len(procs)}.log").open("w")
        proc = subprocess.Popen(list(argv), cwd=app, env=env, stdout=log,
                                stderr=subprocess.STDOUT, text=True)
        procs.append(proc)
        return proc

    try:
        spawn(python, "-m", "recap.testing", "--port", str(stand_in_port))
        wait_for(lambda: _listening(stand_in_port), timeout=60, interval=0.2,
                 what="the stand-in")
        spawn(recap, "worker", "-Q", env["RECAP_QUEUE"], "-P", "solo", "--loglevel", "INFO")
        spawn(recap, "serve", "--port", str(api_port), "--no-auth")
        applied = run([python, "-c", ADD_AND_WAIT, RUN_ID], cwd=app, env=env)
        assert applied.strip() == "summary applied", "\n".join(
            p.read_text()[-3000:] for p in sorted(tmp_path.glob("*.log")))
        wait_for(lambda: answers(f"http://127.0.0.1:{api_port}/readyz"), timeout=60,
                 interval=0.2, what="recap serve")
        request = urllib.request.Request(
            f"http://127.0.0.1:{api_port}/v1/sessions/deploy-{RUN_ID}/context",
            data=json.dumps({"system_prompt": "You help."}).encode(),
            headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert len(json.load(response)["messages"]) < 24
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    logs = "\n".join(p.read_text() for p in sorted(tmp_path.glob("*.log")))
    assert "Traceback" not in logs and "ImportError" not in logs, logs[-4000:]
    migrate_both_ways(recap=recap, alembic=alembic, app=app, env=env, head=head)
    # Nothing of Recap's was left in the app's folder (its own pytest's cache aside).
    assert [p.name for p in sorted(app.iterdir()) if p.name != "__pycache__"] == [
        "alembic.ini", "migrations", "models.py", "settings.py", "tests", "worker.py"]


def migrate_both_ways(*, recap: str, alembic: str, app: Path, env: dict[str, str],
                      head: str) -> None:
    """Each side downgrades and upgrades again while the other's revision stays."""
    def current() -> tuple[str, str]:
        return (run([recap, "db", "current"], cwd=app, env=env).split("\n")[0],
                run([alembic, "current"], cwd=app, env=env))

    recap_at_head = current()[0]
    assert recap_at_head.endswith(f": {head} (at the head)")
    run([alembic, "downgrade", "base"], cwd=app, env=env)
    assert current() == (recap_at_head, "")
    assert run([recap, "db", "downgrade", "base"], cwd=app, env=env).endswith(
        f": downgraded from {head} to no revision (empty)\n")
    run([alembic, "upgrade", "head"], cwd=app, env=env)
    assert current()[1] == f"{APP_HEAD} (head)\n"
    assert run([recap, "db", "upgrade"], cwd=app, env=env).endswith(
        f": upgraded from no revision (empty) to {head}\n")
    assert current() == (recap_at_head, f"{APP_HEAD} (head)\n")


def bench_runs(recap: str, *, app: Path, env: dict[str, str]) -> None:
    """`recap bench` from the wheel, in the app's folder: a benchmark that needs only
    Recap runs; one that needs the bench extra (not installed here) says which install
    brings it, and the run exits 1."""
    assert "--only NAME,..." in run([recap, "bench", "--help"], cwd=app, env=env)
    bench_env = {**env, "RECAP_BENCH_PG": PG_ADMIN, "RECAP_BENCH_REDIS": claim_services()}
    done = subprocess.run([recap, "bench", "--quick", "--only", "specifics,tokens"], cwd=app,
                          env=bench_env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "### specifics: the retention guard over the 200-message demo" in done.stdout
    assert ("FAILED: tokens: this benchmark needs langmem, which the bench extra installs: "
            "pip install 'recap-worker[bench]'") in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0
