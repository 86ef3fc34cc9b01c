"""The documented settings (.env.example, README, operations guide, Procfile) agree
with docker-compose.yml and recap/settings.py, and ``docker compose config``
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
import yaml

from recap.settings import Settings, env_name
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
from tests.helpers import require

pytestmark = pytest.mark.system

# Settings nothing reads (Flower takes FLOWER_BASIC_AUTH), so nothing to document.
UNUSED_SETTINGS: set[str] = set()


def test_every_variable_is_documented_in_env_example() -> None:
    text = "\n".join(strings(load_compose()) + list(procfile().values()))
    used = {m["name"] or m["bare"] for m in references(text)} - {"PORT"}
    settings = {env_name(f) for f in Settings.model_fields if f not in UNUSED_SETTINGS}
    missing = (used | settings) - documented()
    assert not missing, f"not documented in .env.example: {sorted(missing)}"


def _validate_in_clean_process(env: dict[str, str]) -> dict[str, Any]:
    """Load settings from exactly ``env`` in a fresh interpreter; return what it saw."""
    script = (
        "import json\n"
        "from recap.settings import get_settings\n"
        "from recap.worker.celery_app import app\n"
        "s = get_settings()\n"
        "out = {'env': s.env, 'db': s.database_url, 'broker': s.celery_broker_url,\n"
        "       'queue': app.conf.task_default_queue, 'kind': s.summarizer_kind}\n"
        "if s.anthropic_api_key:\n"
        "    from recap.worker.jobs.resources import build_resources\n"
        "    out['model'] = build_resources(s).summarizer.model\n"
        "print(json.dumps(out))\n")
    base = {k: os.environ[k] for k in ("PATH", "TIKTOKEN_CACHE_DIR") if k in os.environ}
    proc = subprocess.run([sys.executable, "-c", script], env={**base, **env}, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_rendered_environment_is_a_valid_production_configuration() -> None:
    dotenv = {**FULL_ENV, "RECAP_QUEUE": "summaries", "RECAP_POLICY": "threshold",
              "RECAP_BATCH_SIZE": "7"}
    svcs = render(load_compose(), dotenv)["services"]

    def seen_by(name: str) -> dict[str, str]:
        # env_file first, then the service's environment over it (compose's order).
        return {**dotenv, **svcs[name]["environment"]}

    worker = _validate_in_clean_process(seen_by("worker"))
    assert worker["env"] == "production"
    assert worker["db"] == "postgresql+psycopg://recap:pgsecret@postgres:5432/recap"
    assert worker["broker"] == "redis://redis:6379/0"
    assert worker["kind"] == "claude"
    # The queue the worker consumes is the one its tasks are routed to.
    argv = shlex.split(svcs["worker"]["command"])
    assert worker["queue"] == argv[argv.index("-Q") + 1] == "summaries"
    for name in ("beat", "flower", "migrate"):
        seen = _validate_in_clean_process(seen_by(name))
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


def test_the_process_table_runs_the_processes_as_compose_does() -> None:
    """docs/operations/running.md's process table: the configured queue and beat
    directory, and no Flower password on a command line (`ps` shows it); the columns
    as shipped."""
    text = (ROOT / "docs" / "operations" / "running.md").read_text()
    table = dict(re.findall(r"^\| ([^|]+?) \| `([^`]+)`.* \|$", text, re.M))
    svcs = services()
    for row, name in (("worker", "worker"), ("beat (sweeper, one only)", "beat")):
        argv = shlex.split(table[row])
        compose = shlex.split(svcs[name]["command"])
        for option in ("-Q", "--schedule"):
            if option in compose:
                assert argv[argv.index(option) + 1] == compose[compose.index(option) + 1]
    assert table["Flower"] == "celery -A recap flower"
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
    require(cli, "no docker compose client on this machine (apt-get install docker-compose)")
    assert cli is not None
    # The file next to an env file of the test's own (never a developer's .env).
    shutil.copy(COMPOSE, tmp_path / COMPOSE.name)
    dotenv = {**FULL_ENV, "RECAP_POLICY": "threshold", "RECAP_BATCH_SIZE": "7"}
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}

    def config(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        (tmp_path / ".env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
        return subprocess.run([*cli, "config"], env=base, capture_output=True, text=True,
                              timeout=60, cwd=tmp_path)

    ok = config(dotenv)
    assert ok.returncode == 0, ok.stderr
    rendered = yaml.safe_load(ok.stdout)["services"]
    assert rendered["flower"]["environment"]["FLOWER_BASIC_AUTH"] == "admin:flowersecret"
    for name in ("migrate", "worker", "beat", "flower", "metrics", "api"):
        env = rendered[name]["environment"]
        assert env["RECAP_BATCH_SIZE"] == "7", name  # every setting, from the env file
        assert (env["ANTHROPIC_API_KEY"] != "") == (name == "worker"), name
        assert (env["RECAP_API_KEYS"] != "") == (name == "api"), name
    refused = config({k: v for k, v in dotenv.items() if k != "FLOWER_PASSWORD"})
    assert refused.returncode != 0 and "FLOWER_PASSWORD" in refused.stderr


def test_operations_guide_covers_every_setting() -> None:
    text = "".join(p.read_text() for p in sorted((ROOT / "docs" / "operations").glob("*.md")))
    missing = [env_name(f) for f in Settings.model_fields if f"`{env_name(f)}`" not in text]
    assert not missing, f"docs/operations/ does not describe {missing}"
