"""The documented settings (.env.example, README, operations guide, Procfile) agree
with docker-compose.yml and worker/settings.py, and ``docker compose config``
accepts the file when a client is installed."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from tests.deploy.common import (
    COMPOSE,
    FULL_ENV,
    documented,
    load_compose,
    procfile,
    references,
    render,
    services,
    strings,
)
from tests.env import ROOT
from worker.config.timing import DERIVED
from worker.settings import Settings, env_name

# Settings nothing reads (Flower takes FLOWER_BASIC_AUTH), so nothing to document.
UNUSED_SETTINGS: set[str] = set()


def test_every_variable_is_documented_in_env_example() -> None:
    text = "\n".join(strings(load_compose()) + list(procfile().values()))
    used = {m["name"] or m["bare"] for m in references(text)} - {"PORT"}
    settings = {env_name(f) for f in Settings.model_fields if f not in UNUSED_SETTINGS}
    missing = (used | settings) - documented()
    assert not missing, f"not documented in .env.example: {sorted(missing)}"


def test_compose_defaults_equal_the_settings_defaults() -> None:
    app_env = load_compose()["x-app-env"]
    checked = set()
    for field, info in Settings.model_fields.items():
        name = env_name(field)
        if not name.startswith("RECAP_") or name not in app_env:
            continue  # the standard names point at compose's own services
        m = re.fullmatch(r"\$\{(\w+):-([^}]*)\}", str(app_env[name]))
        if m is None:
            continue  # fixed (RECAP_ENV) or composed (DATABASE_URL) values
        if m[2] == "":  # derived from the timing knobs unless set
            assert field in DERIVED, name
            checked.add(field)
            continue
        assert m[1] == name and info.annotation is not None
        assert TypeAdapter(info.annotation).validate_python(m[2]) == info.default, name
        checked.add(field)
    assert len(checked) >= 20  # every tunable with a plain default


def _validate_in_clean_process(env: dict[str, str]) -> dict[str, Any]:
    """Load settings from exactly ``env`` in a fresh interpreter; return what it saw."""
    script = (
        "import json\n"
        "from worker.settings import get_settings\n"
        "from worker.celery_app import app\n"
        "s = get_settings()\n"
        "out = {'env': s.env, 'db': s.database_url, 'broker': s.celery_broker_url,\n"
        "       'queue': app.conf.task_default_queue, 'kind': s.summarizer_kind}\n"
        "if s.anthropic_api_key:\n"
        "    from worker.jobs.resources import build_resources\n"
        "    out['model'] = build_resources(s).summarizer.model\n"
        "print(json.dumps(out))\n")
    base = {k: os.environ[k] for k in ("PATH", "TIKTOKEN_CACHE_DIR") if k in os.environ}
    proc = subprocess.run([sys.executable, "-c", script], env={**base, **env}, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_rendered_environment_is_a_valid_production_configuration() -> None:
    svcs = render(load_compose(), {**FULL_ENV, "RECAP_QUEUE": "summaries"})["services"]
    worker = _validate_in_clean_process(svcs["worker"]["environment"])
    assert worker["env"] == "production"
    assert worker["db"] == "postgresql+psycopg://recap:pgsecret@postgres:5432/recap"
    assert worker["broker"] == "redis://redis:6379/0"
    assert worker["kind"] == "claude"
    # The queue the worker consumes is the one its tasks are routed to.
    argv = shlex.split(svcs["worker"]["command"])
    assert worker["queue"] == argv[argv.index("-Q") + 1] == "summaries"
    for name in ("beat", "flower", "migrate"):
        seen = _validate_in_clean_process(svcs[name]["environment"])
        assert seen["queue"] == "summaries" and seen["env"] == "production"


def _normalise(command: str) -> tuple[dict[str, str], list[str]]:
    """Leading VAR=value assignments, then argv without the listen address/port
    (compose listens on 0.0.0.0:5555 in its container; a Procfile uses $PORT)."""
    argv = shlex.split(command)
    env = {}
    while argv and re.match(r"^[A-Z_][A-Z0-9_]*=", argv[0]):
        key, _, value = argv.pop(0).partition("=")
        env[key] = value
    return env, [a for a in argv if not a.startswith(("--address=", "--port="))]


def test_procfile_runs_the_same_commands_as_compose() -> None:
    entries = procfile()
    svcs = services()
    assert set(entries) == {"release", "worker", "beat", "flower", "metrics", "web"}
    assert entries["release"] == svcs["migrate"]["command"]
    for name, service in (("worker", "worker"), ("beat", "beat"), ("flower", "flower"),
                          ("metrics", "metrics"), ("web", "api")):
        compose_env, compose_argv = _normalise(svcs[service]["command"].replace("$$", "$"))
        proc_env, proc_argv = _normalise(entries[name])
        assert proc_argv == compose_argv, name
        assert not compose_env
        for key, value in proc_env.items():
            assert svcs[service]["environment"][key] == value, key
    assert "FLOWER_BASIC_AUTH" in _normalise(entries["flower"])[0]
    assert "--address=127.0.0.1" in entries["flower"]


def test_readme_runs_the_processes_as_compose_does() -> None:
    """README's process table: the configured queue and beat directory, and no
    Flower password on a command line (`ps` shows it); the columns as shipped."""
    text = (ROOT / "README.md").read_text()
    table = dict(re.findall(r"^\| ([^|]+?) \| `([^`]+)`.* \|$", text, re.M))
    svcs = services()
    for row, name in (("worker", "worker"), ("beat (sweeper, one only)", "beat")):
        argv = shlex.split(table[row])
        compose = shlex.split(svcs[name]["command"])
        for option in ("-Q", "--schedule"):
            if option in compose:
                assert argv[argv.index(option) + 1] == compose[compose.index(option) + 1]
    assert table["Flower"] == "celery -A worker flower"
    assert not re.search(r"--basic-auth[= ]", text)
    columns = svcs["flower"]["environment"]["FLOWER_TASKS_COLUMNS"]
    assert f"FLOWER_TASKS_COLUMNS={columns}" in text and "FLOWER_BASIC_AUTH=" in text


def _compose_cli() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True,
                                 timeout=30).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_docker_compose_config_accepts_the_file(tmp_path: Path) -> None:
    cli = _compose_cli()
    if cli is None:
        pytest.skip("no docker compose client on this machine")
    empty = tmp_path / "empty.env"
    empty.write_text("")
    # --env-file keeps a developer's own .env out of the check.
    run = [*cli, "--env-file", str(empty), "-f", str(COMPOSE), "config", "--format", "json"]
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    ok = subprocess.run(run, env={**base, **FULL_ENV}, capture_output=True, text=True,
                        timeout=60, cwd=ROOT)
    assert ok.returncode == 0, ok.stderr
    config = json.loads(ok.stdout)
    assert (config["services"]["flower"]["environment"]["FLOWER_BASIC_AUTH"]
            == "admin:flowersecret")
    no_password = {k: v for k, v in FULL_ENV.items() if k != "FLOWER_PASSWORD"}
    refused = subprocess.run(run, env={**base, **no_password}, capture_output=True, text=True,
                             timeout=60, cwd=ROOT)
    assert refused.returncode != 0 and "FLOWER_PASSWORD" in refused.stderr


def test_operations_guide_covers_every_setting() -> None:
    text = (ROOT / "docs" / "OPERATIONS.md").read_text()
    missing = [env_name(f) for f in Settings.model_fields if f"`{env_name(f)}`" not in text]
    assert not missing, f"docs/OPERATIONS.md does not describe {missing}"
