"""docker-compose.yml, Procfile, Dockerfile and .env.example agree with each other
and with worker/settings.py.

No Docker engine is needed: the compose file is parsed with PyYAML and its
``${VAR...}`` references are interpolated here with compose's rules. When a
``docker compose`` client is installed, ``docker compose config`` runs as well.
"""

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
from pydantic import TypeAdapter

from tests.env import ROOT
from worker.settings import Settings, env_name

COMPOSE = ROOT / "docker-compose.yml"
PROCFILE = ROOT / "Procfile"
ENV_EXAMPLE = ROOT / ".env.example"
DOCKERFILE = ROOT / "Dockerfile"

APP_SERVICES = ("migrate", "worker", "beat", "flower")
SECRETS = ("ANTHROPIC_API_KEY", "POSTGRES_PASSWORD", "FLOWER_PASSWORD")
# Settings nothing reads (Flower takes FLOWER_BASIC_AUTH), so nothing to document.
UNUSED_SETTINGS: set[str] = set()
FULL_ENV = {"ANTHROPIC_API_KEY": "sk-ant-compose", "POSTGRES_PASSWORD": "pgsecret",
            "FLOWER_PASSWORD": "flowersecret"}

# Compose interpolation: $$ is a literal $, then ${NAME}, ${NAME:-d}, ${NAME-d},
# ${NAME:?msg}, ${NAME?msg} and bare $NAME.
_REF = re.compile(r"\$(?:(?P<escaped>\$)|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                  r"(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*)|)")


class MissingVariable(Exception):
    """A ${VAR:?message} reference whose variable is unset or empty."""


def interpolate(text: str, env: dict[str, str]) -> str:
    """Render one compose string the way compose does; raise on bad syntax."""
    def sub(m: re.Match[str]) -> str:
        if m["escaped"]:
            return "$"
        if m["bare"]:
            return env.get(m["bare"], "")
        name, op, arg = m["name"], m["op"], m["arg"]
        if name is None:
            raise ValueError(f"invalid interpolation at {m.string[m.start():m.start() + 20]!r}")
        value = env.get(name)
        missing = value is None or (value == "" and op is not None and op.startswith(":"))
        if op in ("-", ":-") and missing:
            return arg
        if op in ("?", ":?") and missing:
            raise MissingVariable(f"{name}: {arg}")
        return value or ""

    return _REF.sub(sub, text)


def render(node: Any, env: dict[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, dict):
        return {k: render(v, env) for k, v in node.items()}
    if isinstance(node, list):
        return [render(v, env) for v in node]
    return node


def references(text: str) -> list[re.Match[str]]:
    return [m for m in _REF.finditer(text) if not m["escaped"]]


def strings(node: Any) -> list[str]:
    """Every string value of a parsed YAML tree (so comments do not count)."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in strings(v)]
    return []


def load_compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def procfile() -> dict[str, str]:
    entries = {}
    for line in PROCFILE.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_-]+):\s*(.+)$", line)
        if m:
            entries[m[1]] = m[2]
    return entries


def documented() -> set[str]:
    """Names set in .env.example (``NAME=`` or ``# NAME=``), each after a comment."""
    names = set()
    lines = ENV_EXAMPLE.read_text().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^#?\s*([A-Z][A-Z0-9_]*)=", line)
        if m:
            assert i > 0 and lines[i - 1].startswith("#"), f"{m[1]} has no comment above it"
            names.add(m[1])
    return names


def services() -> dict[str, Any]:
    return load_compose()["services"]


def test_required_services_exist() -> None:
    assert set(services()) >= {"postgres", "redis", *APP_SERVICES}


def test_postgres_and_redis_are_checked_and_keep_data_in_named_volumes() -> None:
    data = load_compose()
    pg, redis = data["services"]["postgres"], data["services"]["redis"]
    assert pg["image"] == "postgres:16"
    assert "pg_isready" in " ".join(pg["healthcheck"]["test"])
    assert redis["image"] == "redis:7"
    assert redis["healthcheck"]["test"][-2:] == ["redis-cli", "ping"]
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command
    # A broker must never evict queued jobs to make room.
    assert "--maxmemory-policy noeviction" in command
    named = set(data["volumes"])
    for svc, path in ((pg, "/var/lib/postgresql/data"), (redis, "/data")):
        (volume,) = svc["volumes"]
        source, target = volume.split(":")
        assert source in named and target == path


def test_app_services_build_one_non_root_image() -> None:
    svcs = services()
    assert {svcs[name]["build"] for name in APP_SERVICES} == {"."}
    text = DOCKERFILE.read_text()
    assert re.search(r"^FROM python:3\.11-slim$", text, re.M)
    assert re.search(r"^RUN pip install \.$", text, re.M)
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users and users[-1] not in ("root", "0")


def test_migrate_runs_alembic_once_before_the_app() -> None:
    svcs = services()
    migrate = svcs["migrate"]
    assert migrate["command"] == "alembic upgrade head"
    assert migrate["restart"] == "no"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("worker", "beat"):
        assert (svcs[name]["depends_on"]["migrate"]["condition"]
                == "service_completed_successfully")


def test_worker_consumes_the_configured_queue_and_has_a_ping_healthcheck() -> None:
    worker = services()["worker"]
    argv = shlex.split(worker["command"])
    assert argv[:4] == ["celery", "-A", "worker", "worker"]
    assert argv[argv.index("-Q") + 1] == "${RECAP_QUEUE:-recap}"
    assert argv[argv.index("-n") + 1] == "celery@%h"
    check = " ".join(worker["healthcheck"]["test"])
    assert "celery -A worker inspect ping -d celery@$$HOSTNAME" in check
    # Warm shutdown must be allowed to outlast the longest job.
    grace = int(worker["stop_grace_period"].rstrip("s"))
    assert grace > Settings.model_fields["task_time_limit_s"].default


def test_exactly_one_beat() -> None:
    beat = services()["beat"]
    argv = shlex.split(beat["command"])
    assert argv[:4] == ["celery", "-A", "worker", "beat"]
    assert beat["deploy"]["replicas"] == 1
    # The schedule file is in a directory of beat's own, not in a shared /tmp;
    # the image creates the default one for its user.
    schedule = argv[argv.index("--schedule") + 1]
    assert schedule == "${RECAP_BEAT_DIR:-/var/lib/recap}/celerybeat-schedule"
    assert re.search(r"install -d -o recap -m 0700 /var/lib/recap$", DOCKERFILE.read_text(),
                     re.M)


def test_flower_takes_basic_auth_from_env_without_a_default_password() -> None:
    flower = services()["flower"]
    assert "--basic-auth" not in flower["command"]  # would show the password in `ps`
    auth = flower["environment"]["FLOWER_BASIC_AUTH"]
    assert re.fullmatch(r"\$\{FLOWER_USER:-\w+\}:\$\{FLOWER_PASSWORD:\?[^}]+\}", auth)
    rendered = render(flower, {**FULL_ENV, "FLOWER_USER": "ops"})
    assert rendered["environment"]["FLOWER_BASIC_AUTH"] == "ops:flowersecret"
    # The task list shows the session id (args) and the outcome (result).
    assert {"args", "result"} <= set(flower["environment"]["FLOWER_TASKS_COLUMNS"].split(","))
    assert all(p.startswith("127.0.0.1:") for p in flower["ports"])
    assert "/healthcheck" in " ".join(flower["healthcheck"]["test"])


@pytest.mark.parametrize("path", [COMPOSE, PROCFILE, ENV_EXAMPLE])
def test_no_default_for_any_secret(path: Path) -> None:
    text = path.read_text()
    for name in SECRETS:
        for m in references(text):
            if (m["name"] or m["bare"]) == name:
                assert m["op"] == ":?", f"{path.name}: {m[0]} must use ${{{name}:?...}}"
        # .env.example leaves every secret empty.
        for value in re.findall(rf"^#?\s*{name}=(.*)$", text, re.M):
            assert value == "", f"{path.name} gives {name} a value"


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize("value", [None, ""])
def test_compose_refuses_to_start_without_each_secret(secret: str, value: str | None) -> None:
    env = dict(FULL_ENV)
    if value is None:
        del env[secret]
    else:
        env[secret] = value
    with pytest.raises(MissingVariable, match=secret):
        render(load_compose(), env)


def test_api_key_goes_to_the_worker_only() -> None:
    rendered = render(load_compose(), FULL_ENV)["services"]
    holders = {name for name, svc in rendered.items()
               if "sk-ant-compose" in json.dumps(svc)}
    assert holders == {"worker"}


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
    return json.loads(proc.stdout.splitlines()[-1])  # type: ignore[no-any-return]


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
    assert set(entries) == {"release", "worker", "beat", "flower", "metrics"}
    assert entries["release"] == svcs["migrate"]["command"]
    for name in ("worker", "beat", "flower", "metrics"):
        compose_env, compose_argv = _normalise(svcs[name]["command"].replace("$$", "$"))
        proc_env, proc_argv = _normalise(entries[name])
        assert proc_argv == compose_argv, name
        assert not compose_env
        for key, value in proc_env.items():
            assert svcs[name]["environment"][key] == value, key
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
