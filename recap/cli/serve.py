"""``recap serve [--host H] [--port P] [--workers N] [--no-auth] [--allowed-hosts NAMES]
[--print-openapi]``: the HTTP API (recap.http) on uvicorn.

Every route but ``/healthz`` needs ``Authorization: Bearer KEY``, a key of
RECAP_API_KEYS (comma-separated, so keys can be rotated; ``KEY:TENANT`` binds a
key to the ids under ``TENANT/``). Without a key the server refuses to start,
unless ``--no-auth`` is given on a loopback address (127.0.0.1, ::1, localhost);
``--no-auth`` on any other address is refused too, and answers only loopback
Host names. ``--allowed-hosts`` (RECAP_API_ALLOWED_HOSTS) names the Host names
the server answers to, with keys or without.
The access log names method, path and status: never a key or message text.
Needs the ``server`` extra (``pip install 'recap-worker[server]'``).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import sys

from recap.cli.base import Subparsers, command, err, whole_number

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
APP = "recap.http.app:create_app"


def register(sub: Subparsers) -> None:
    p = command(sub, "serve", "Serve the HTTP API (needs RECAP_API_KEYS).", run)
    p.add_argument("--host", default=DEFAULT_HOST,
                   help=f"address to listen on (default {DEFAULT_HOST}; 0.0.0.0 for all)")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT,
                   help=f"port to listen on (default {DEFAULT_PORT})")
    p.add_argument("--workers", type=lambda t: whole_number(t, 1), default=1, metavar="N",
                   help="server processes (default 1)")
    p.add_argument("--no-auth", action="store_true",
                   help="no API keys: allowed on a loopback address only")
    p.add_argument("--allowed-hosts", metavar="NAMES", default=None,
                   help="Host names to answer, comma-separated (*.example.com for its "
                        "subdomains); default RECAP_API_ALLOWED_HOSTS, else any with keys "
                        "and loopback names only with --no-auth")
    p.add_argument("--print-openapi", action="store_true",
                   help="print the OpenAPI schema (docs/openapi.json) and exit")


def _port(text: str) -> int:
    value = whole_number(text, 0)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be at most 65535, got {value}")
    return value


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def openapi_json() -> str:
    """The API's OpenAPI schema, as committed in docs/openapi.json."""
    from recap.http.app import build_api

    return json.dumps(build_api().openapi(), indent=2, sort_keys=True) + "\n"


def refusal(*, host: str, no_auth: bool, keys: int) -> str | None:
    """Why the server may not start with these options, or None."""
    if no_auth and not is_loopback(host):
        return (f"refusing --no-auth on {host}: without keys the API may listen on a "
                "loopback address only (127.0.0.1, ::1, localhost)")
    if not no_auth and not keys:
        return ("refusing to start: RECAP_API_KEYS is not set (comma-separated bearer keys); "
                "for local development only, use --no-auth on 127.0.0.1")
    return None


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError:
        err("error: recap serve needs the server extra: pip install 'recap-worker[server]'")
        return 1
    if args.print_openapi:
        sys.stdout.write(openapi_json())
        return 0
    from recap.http.app import NO_AUTH_ENV
    from recap.http.guard import parse_keys
    from recap.http.hosts import parse_hosts
    from recap.settings import get_settings

    if args.allowed_hosts is not None:  # the workers read it from the environment
        os.environ["RECAP_API_ALLOWED_HOSTS"] = args.allowed_hosts
    # A bad configuration is one line now, not a worker's traceback.
    settings = get_settings()
    allowed = parse_hosts(settings.api_allowed_hosts)
    why = refusal(host=args.host, no_auth=args.no_auth,
                  keys=len(parse_keys(settings.api_keys.get_secret_value())))
    if why:
        err(why)
        return 2
    if args.no_auth:
        os.environ[NO_AUTH_ENV] = "1"  # the workers build the app from the environment
        hosts = allowed or ("loopback names",)
        err(f"warning: --no-auth: no API key is checked (listening on {args.host} only, "
            f"answering Host {', '.join(hosts)})")
    else:
        os.environ.pop(NO_AUTH_ENV, None)
    from recap.http.protocol import JsonErrorsProtocol

    uvicorn.run(APP, factory=True, host=args.host, port=args.port, workers=args.workers,
                log_level="info", access_log=True, server_header=False,
                proxy_headers=False, http=JsonErrorsProtocol)
    return 0
