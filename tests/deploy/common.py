"""Parsing docker-compose.yml, the Procfile and .env.example with compose's
interpolation rules: the helpers the deploy-file tests share."""

from __future__ import annotations

import re
from typing import Any

import yaml

from tests.env import ROOT

COMPOSE = ROOT / "docker-compose.yml"


PROCFILE = ROOT / "Procfile"


ENV_EXAMPLE = ROOT / ".env.example"


DOCKERFILE = ROOT / "Dockerfile"


APP_SERVICES = ("migrate", "worker", "beat", "flower")


SECRETS = ("ANTHROPIC_API_KEY", "POSTGRES_PASSWORD", "FLOWER_PASSWORD", "RECAP_API_KEYS")


FULL_ENV = {"ANTHROPIC_API_KEY": "sk-ant-compose", "POSTGRES_PASSWORD": "pgsecret",
            "FLOWER_PASSWORD": "flowersecret", "RECAP_API_KEYS": "apikey1,apikey2"}


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
