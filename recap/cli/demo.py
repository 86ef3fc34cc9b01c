"""``recap demo [--messages N] [--db PATH] [--keep]``: run Recap's real pipeline on a
local SQLite database, with no services (the same as ``python -m recap.demo``).

Without ``--db`` the files go to a new temporary directory, removed at the end
unless ``--keep``; a ``--db`` file is always kept."""

from __future__ import annotations

import argparse

from recap.cli.base import Subparsers, command, positive


def register(sub: Subparsers) -> None:
    p = command(sub, "demo", "Run a self-contained demo on a local SQLite database.", run)
    p.add_argument("--messages", type=positive, default=None, metavar="N",
                   help="messages to generate")
    p.add_argument("--db", metavar="PATH",
                   help="SQLite database file to use, kept (default: a temporary directory)")
    p.add_argument("--keep", action="store_true",
                   help="keep the temporary directory (removed at the end otherwise)")


def run(args: argparse.Namespace) -> int:
    from recap.demo.run import main

    return main(args)
