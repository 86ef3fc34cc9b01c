"""The app factory ``recap serve`` runs: ``create_app()`` (for uvicorn, behind the
guard) and ``build_api()`` (the FastAPI app itself, e.g. for its OpenAPI schema)."""

from __future__ import annotations

import os

from fastapi import FastAPI

from recap.errors import ConfigError
from recap.http import errors
from recap.http.fast import ReplyPath
from recap.http.guard import ASGIApp, Guard, parse_keys
from recap.http.hosts import LOOPBACK_NAMES, parse_hosts
from recap.http.openapi import declare_bearer_key
from recap.http.routes import health, memories, messages, recall, sessions
from recap.http.schemas import V1_ERRORS

# Set by ``recap serve --no-auth`` (only on a loopback address) for its workers.
NO_AUTH_ENV = "RECAP_SERVE_NO_AUTH"
VERSION = "1"

DESCRIPTION = """Recap's HTTP API: a rolling summary of long chat conversations.

Every route but `/healthz` needs `Authorization: Bearer KEY` (a key of
RECAP_API_KEYS); a key bound to a tenant (`KEY:TENANT`) reaches only the session
and user ids under `TENANT/`, and every other id is answered as unknown. An id
is one path segment, percent-encoded: `/` as `%2F` (`/v1/sessions/acme%2F42`).
Errors are `{"error": {"type", "message"}}`: 400 a body that is not JSON or a Host
the server does not answer to, 401 no or a wrong key, 403 an Origin it refuses,
404 no such session or user (a session is stored by its first message, or by
`PUT`/`PATCH .../settings?create=true`), 409 a job holds the session (retry after
`Retry-After` seconds), 413 a body over RECAP_API_MAX_BODY_BYTES, 415 a body
sent without `Content-Type: application/json`, 422 invalid input (nothing was
stored; the message names the field), 503 the database or the broker is
unavailable.
"""


def build_api() -> FastAPI:
    """The FastAPI app: routes, error mapping and the metrics registry; no guard."""
    from prometheus_client import CollectorRegistry

    from recap.ops.exporter import RecapCollector

    api = FastAPI(title="Recap", version=VERSION, description=DESCRIPTION,
                  docs_url=None, redoc_url=None, openapi_url="/openapi.json")
    for router in (messages.router, sessions.router, memories.router, recall.router):
        api.include_router(router, responses=V1_ERRORS)
    api.include_router(health.router)
    errors.install(api)
    declare_bearer_key(api)
    api.state.registry = CollectorRegistry()
    api.state.registry.register(RecapCollector())
    return api


def create_app() -> ASGIApp:
    """The served app: :func:`build_api` behind the key check and the body limit, with
    the reply path's POSTs served by :class:`~recap.http.fast.ReplyPath`.

    Raises ConfigError when RECAP_API_KEYS holds no key and ``recap serve`` was
    not started with ``--no-auth`` (which it allows on a loopback address only),
    or when a key's tenant or a host of RECAP_API_ALLOWED_HOSTS is malformed.
    Without keys, only loopback Host names are answered unless
    RECAP_API_ALLOWED_HOSTS names others.
    """
    from recap.settings import get_settings

    settings = get_settings()
    keys = parse_keys(settings.api_keys.get_secret_value())
    no_auth = os.environ.get(NO_AUTH_ENV) == "1"
    if not keys and not no_auth:
        raise ConfigError("RECAP_API_KEYS is not set: the HTTP API needs at least one key "
                          "(or recap serve --no-auth on a loopback address)")
    hosts: tuple[str, ...] | None = parse_hosts(settings.api_allowed_hosts) or None
    if no_auth:
        keys, hosts = (), hosts or LOOPBACK_NAMES
    return Guard(ReplyPath(build_api()), keys=keys, max_body=settings.api_max_body_bytes,
                 hosts=hosts)
