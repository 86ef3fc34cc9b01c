"""docker-compose.yml, Procfile, Dockerfile and .env.example agree with each other
and with recap/settings.py.

No Docker engine is needed: the compose file is parsed with PyYAML and its
``${VAR...}`` references are interpolated here with compose's rules. When a
``docker compose`` client is installed, ``docker compose config`` runs as well.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from recap.settings import Settings
from tests.deploy.common import (
    APP_SERVICES,
    COMPOSE,
    DOCKERFILE,
    ENV_EXAMPLE,
    FULL_ENV,
    PROCFILE,
    SECRETS,
    MissingVariable,
    load_compose,
    references,
    render,
    services,
)
from tests.env import ROOT

pytestmark = pytest.mark.system


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


def test_the_image_ships_the_product_only() -> None:
    """No Docker engine here: the Dockerfile is read. It installs the package `recap`
    (the benchmarks `recap bench` runs are in it) and copies nothing else of the
    checkout but what the install and `alembic upgrade head` read: no tests, no
    benchmark lab, nothing put on PYTHONPATH."""
    text = DOCKERFILE.read_text()
    copied = {src.rstrip("/") for line in re.findall(r"^COPY (.+)$", text, re.M)
              for src in line.split()[:-1]}
    assert copied == {"pyproject.toml", "README.md", "recap", "alembic.ini"}
    assert "PYTHONPATH" not in text and "/app/docs" not in text
    assert text.index("COPY recap ./recap") < text.index("RUN pip install .")
    # `recap bench` in the image is the installed package's, with the bench extra's
    # packages when built with RECAP_EXTRAS=bench.
    assert 'then pip install ".[$RECAP_EXTRAS]"; fi' in text
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert "bench" in extras
    assert (ROOT / "recap" / "bench" / "__main__.py").is_file()


def test_migrate_runs_once_before_the_app() -> None:
    svcs = services()
    migrate = svcs["migrate"]
    assert migrate["command"] == "recap db upgrade"
    assert migrate["restart"] == "no"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("worker", "beat", "flower", "metrics", "api"):
        assert (svcs[name]["depends_on"]["migrate"]["condition"]
                == "service_completed_successfully"), name


def test_every_app_service_reads_the_one_env_file() -> None:
    svcs = services()
    for name in (*APP_SERVICES, "metrics", "api"):
        assert svcs[name]["env_file"] == ".env", name
    # Compose sets only what it wires itself and the secrets it withholds; every
    # setting comes from the env file as written there.
    app_env = load_compose()["x-app-env"]
    assert set(app_env) == {"RECAP_ENV", "DATABASE_URL", "CELERY_BROKER_URL", *SECRETS}
    assert all(app_env[name] == "" for name in SECRETS)


def test_worker_consumes_the_configured_queue_and_has_a_ping_healthcheck() -> None:
    worker = services()["worker"]
    argv = shlex.split(worker["command"])
    assert argv[:2] == ["recap", "worker"]  # Celery's worker on Recap's app
    assert argv[argv.index("-Q") + 1] == "${RECAP_QUEUE:-recap}"
    assert argv[argv.index("-n") + 1] == "celery@%h"
    check = " ".join(worker["healthcheck"]["test"])
    assert "celery -A recap inspect ping -d celery@$$HOSTNAME" in check
    # Warm shutdown must be allowed to outlast the longest job.
    grace = int(worker["stop_grace_period"].rstrip("s"))
    assert grace > Settings.model_fields["task_time_limit_s"].default


def test_exactly_one_beat() -> None:
    beat = services()["beat"]
    argv = shlex.split(beat["command"])
    assert argv[:2] == ["recap", "beat"]
    assert beat["deploy"]["replicas"] == 1
    # The schedule file is in a directory of beat's own, not in a shared /tmp: the
    # data directory, which the image creates for its user (XDG_DATA_HOME=/var/lib).
    assert "--schedule" not in argv
    assert re.search(r"^\s*XDG_DATA_HOME=/var/lib$", DOCKERFILE.read_text(), re.M)
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
