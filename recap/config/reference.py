"""docs/SETTINGS.md and .env.example, generated from the settings model.

``python -m recap.config.reference`` rewrites both; tests/test_settings_reference.py
fails when either is stale. A setting's line comes from its ``description``, its
group from the model that declares it (recap/config).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from recap.config.features import Calls, Replies, Retention
from recap.config.policy_fit import IGNORED_BY_ADAPTIVE
from recap.config.prices import PriceList
from recap.config.services import STANDARD, HttpApi, Services
from recap.config.timing import DERIVED, Sweeper, Timing
from recap.config.tuning import TUNABLE, Tuning

GROUPS: tuple[type[BaseModel], ...] = (Services, Tuning, Calls, Retention, Replies, Timing,
                                       Sweeper, HttpApi, PriceList)
ROOT = Path(__file__).resolve().parents[2]

# Variables only docker compose reads (secrets, its own services), written by hand.
ENV_PREAMBLE = """\
# Recap's environment. Copy to .env (never commit .env) and fill in the four
# values marked REQUIRED; docker compose refuses to start while any is empty.
# Every Recap service of docker-compose.yml reads this one file (env_file), and
# honcho and foreman read it for the Procfile: a setting written here reaches
# every process. Commented-out lines show the default that applies when unset.
# Generated from recap/config by `python -m recap.config.reference` (edit the
# settings' descriptions there, not this file); the same list: docs/SETTINGS.md.

# ---------------------------------------------------------------- secrets ---

# REQUIRED. Claude API key; only the worker service receives it.
ANTHROPIC_API_KEY=

# REQUIRED. PostgreSQL password. It is placed in DATABASE_URL, so use URL-safe
# characters, e.g. `openssl rand -hex 24`.
POSTGRES_PASSWORD=

# REQUIRED. Flower's basic-auth password; there is no default. Must not contain
# "," (Flower splits its credential list on commas), e.g. `openssl rand -hex 24`.
FLOWER_PASSWORD=

# REQUIRED. Bearer keys of the HTTP API (the api service), comma-separated, e.g.
# `openssl rand -hex 32`.
RECAP_API_KEYS=

# ---------------------------------------------------- services and wiring ---

# PostgreSQL role and database created on first start (compose builds
# DATABASE_URL from these and POSTGRES_PASSWORD).
# POSTGRES_USER=recap
# POSTGRES_DB=recap

# Set by compose itself: RECAP_ENV=production (refuses SQLite defaults and the
# offline summarizer) and DATABASE_URL, built from the POSTGRES_* values above.
# Outside compose (Procfile platforms, your chat app) set them directly:
# RECAP_ENV=production
# DATABASE_URL=postgresql+psycopg://recap:PASSWORD@db-host:5432/recap

# Broker. Redis in compose; an amqp:// URL switches to RabbitMQ (docs/DEPLOYMENT.md).
# CELERY_BROKER_URL=redis://redis:6379/0

# Flower's basic-auth user name.
# FLOWER_USER=admin
# Host port for Flower; always bound to 127.0.0.1.
# FLOWER_HOST_PORT=5555

# Worker processes per worker container: each runs one job (one Claude call) at
# a time, so this times the number of worker containers caps parallel API calls.
# RECAP_WORKER_CONCURRENCY=4

# Directory of beat's schedule file (scratch: losing it only moves the next
# sweep). Unset: the data directory ($XDG_DATA_HOME/recap; /var/lib/recap in
# the image). Set it to a writable directory of beat's own, never a /tmp shared
# with others.
# RECAP_BEAT_DIR=

# Server processes of the api service (`recap serve`; each one Python process:
# about one core).
# RECAP_API_WORKERS=2
# The api service's port on the host's loopback interface.
# RECAP_API_HOST_PORT=8000

# ANTHROPIC_BASE_URL: an alternative Messages API endpoint (a gateway or proxy).
# ANTHROPIC_BASE_URL=https://api.anthropic.com
# RECAP_PROMPT_FILE: a custom summarization prompt (in compose, mount the file as
# well); the default is recap/llm/prompts/default.txt.
# RECAP_PROMPT_FILE=/etc/recap/prompt.txt
"""


def env_name(field: str) -> str:
    return STANDARD.get(field, "RECAP_" + field.upper())


def grouped() -> list[tuple[type[BaseModel], list[tuple[str, FieldInfo]]]]:
    """(group, its fields) in documentation order."""
    return [(g, list(g.model_fields.items())) for g in GROUPS]


def _title(group: type[BaseModel]) -> tuple[str, str]:
    doc = (group.__doc__ or group.__name__).strip().split("\n\n", 1)
    return doc[0].strip().rstrip("."), " ".join(doc[1].split()) if len(doc) > 1 else ""


# The embedded defaults live in the user's data directory (recap/paths.py), whose
# path differs per machine: shown by where they are, not by one machine's path.
EMBEDDED = {"database_url": "sqlite:///<data dir>/recap.sqlite3",
            "celery_broker_url": "sqla+sqlite:///<data dir>/recap-broker.sqlite3"}


def _default(field: str, info: FieldInfo) -> str:
    if field in EMBEDDED:
        return EMBEDDED[field]
    value: Any = info.default
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _bounds(info: FieldInfo) -> str:
    choices = get_args(info.annotation) if get_origin(info.annotation) is Literal else ()
    if choices:
        return ", ".join(f"`{c}`" for c in choices)
    found = {k: getattr(m, k) for m in info.metadata for k in ("ge", "le", "max_length")
             if getattr(m, k, None) is not None}
    if "ge" in found and "le" in found:
        return f"{found['ge']} to {found['le']}"
    if "max_length" in found:
        return f"at most {found['max_length']} characters"
    return f"at least {found['ge']}" if "ge" in found else ""


def markdown() -> str:
    """docs/SETTINGS.md."""
    out = ["# Settings", "",
           "Generated from the settings model (recap/config) by",
           "`python -m recap.config.reference`; do not edit by hand. Every setting is an",
           "environment variable; the standard names (DATABASE_URL, CELERY_BROKER_URL,",
           "ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) have no prefix. Settings marked *session*",
           "may also be overridden per session (`recap configure`). Settings marked",
           "*derived* follow from RECAP_TASK_TIME_LIMIT_S (T) and RECAP_RETRY_BACKOFF_MAX_S",
           "(B) unless set; a value set by hand is checked against the others.", "",
           "Every number and text has the bound its *Valid* column shows: a value outside",
           "it stops the process at start-up with a line naming the variable, and a",
           "session override outside it is refused (422 over HTTP, an error from",
           "`recap configure`, InvalidInput from `configure_session`), so no setting can",
           "ask a computation for more than its bound. Settings marked *threshold only*",
           "belong to the fixed rule: under the adaptive policy (the default), which does",
           "not read them, setting one is refused, at start-up and per session. A RECAP_*",
           "variable that no setting reads is warned of at start-up, with the closest",
           "setting's name.", ""]
    for group, fields in grouped():
        title, intro = _title(group)
        out += [f"## {title}", ""] + ([intro, ""] if intro else [])
        out += ["| Variable | Default | Valid | What it does |", "|---|---|---|---|"]
        for field, info in fields:
            notes = []
            if field in TUNABLE:
                notes.append("*session*")
            if field in IGNORED_BY_ADAPTIVE:
                notes.append("*threshold only*")
            if field in DERIVED:
                notes.append(f"*derived*: {DERIVED[field]}")
            what = " ".join([info.description or "", *notes]).strip().replace("|", "\\|")
            default = _default(field, info)
            out.append(f"| `{env_name(field)}` | {f'`{default}`' if default else '(unset)'} "
                       f"| {_bounds(info)} | {what} |")
        out.append("")
    return "\n".join(out)


def env_example() -> str:
    """.env.example: compose's own variables, then every setting, commented out at
    its default under a one-line comment."""
    preset = {line.split("=", 1)[0] for line in ENV_PREAMBLE.splitlines()
              if line and not line.startswith("#") and "=" in line}
    out = [ENV_PREAMBLE.rstrip()]
    for group, fields in grouped():
        title, _ = _title(group)
        out += ["", f"# {'-' * max(3, 74 - len(title))} {title.lower()} ---", ""]
        for field, info in fields:
            name = env_name(field)
            if name in preset:
                continue
            note = (f" Derived: {DERIVED[field]}." if field in DERIVED else
                    " RECAP_POLICY=threshold only." if field in IGNORED_BY_ADAPTIVE else "")
            out += [f"# {info.description}{note}", f"# {name}={_default(field, info)}"]
    return "\n".join(out) + "\n"


FILES = {"docs/SETTINGS.md": markdown, ".env.example": env_example}


def main() -> int:
    for rel, render in FILES.items():
        (ROOT / rel).write_text(render())
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
