"""``recap demo [--messages N] [--db PATH]``: run Recap's real pipeline on a local
SQLite database, with no services (the same as ``python -m worker.demo``)."""

from __future__ import annotations

import argparse

from worker.cli.base import Subparsers, command, positive


def register(sub: Subparsers) -> None:
    p = command(sub, "demo", "Run a self-contained demo on a local SQLite database.", run)
    p.add_argument("--messages", type=positive, default=None, metavar="N",
                   help="messages to generate")
    p.add_argument("--db", metavar="PATH", help="SQLite database file to use")


def run(args: argparse.Namespace) -> int:
    from worker.demo.run import main

    return main(args)
