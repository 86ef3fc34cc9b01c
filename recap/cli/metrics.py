"""``recap metrics [--address A] [--port P]``: a Prometheus exporter.

Serves ``/metrics`` over HTTP (prometheus_client). Every scrape reads the
database (recap.ops.metrics.snapshot, one short read transaction), so one
exporter is right whatever number of workers run; it caches only the totals of
runs recorded more than 30 minutes ago, so a scrape reads recent rows only. If
the database cannot be read, the scrape still answers, with ``recap_up 0``.
Series: docs/operations/metrics.md. SIGTERM or Ctrl-C stops it
(exit 0 / 130).
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from typing import TYPE_CHECKING

from recap.cli.base import Subparsers, command

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client.registry import CollectorRegistry

DEFAULT_PORT = 9808
DEFAULT_ADDRESS = "127.0.0.1"

__all__ = ["register", "run", "serve"]

log = logging.getLogger("recap.metrics")


def register(sub: Subparsers) -> None:
    p = command(sub, "metrics", "Serve Prometheus metrics read from the database.", run)
    p.add_argument("--address", default=DEFAULT_ADDRESS,
                   help=f"address to listen on (default {DEFAULT_ADDRESS}; 0.0.0.0 for all)")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT,
                   help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)")


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 0 and 65535, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry

    from recap.ops.exporter import RecapCollector
    from recap.settings import get_settings

    get_settings()  # refuse a bad configuration now, not at the first scrape
    registry = CollectorRegistry()
    registry.register(RecapCollector())
    server = serve(registry, address=args.address, port=args.port)
    host, port = server.server_address[:2]
    print(f"recap metrics: serving http://{host!s}:{port}/metrics", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    finally:
        server.shutdown()
        server.server_close()
    return 0


def serve(registry: CollectorRegistry, *, address: str, port: int) -> WSGIServer:
    """Serve ``registry`` on a daemon thread; returns the server (``shutdown()`` it)."""
    from prometheus_client import start_http_server

    server, _thread = start_http_server(port, addr=address, registry=registry)
    return server
