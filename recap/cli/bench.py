"""``recap bench [--only NAME,...] [--quick] [--latency S] [--out FILE] [--plots DIR]
[--json]``: Recap's benchmarks against a private database and queue and a local
stand-in of Claude (recap.bench; also ``python -m recap.bench``). Figures go to
stdout; benchmarks that compare with peers or draw plots need the bench extra."""

from __future__ import annotations

import argparse
import sys

from recap.bench.main import add_arguments
from recap.cli.base import Subparsers, command


def register(sub: Subparsers) -> None:
    p = command(sub, "bench", "Run Recap's benchmarks (a private database and queue, a "
                              "local stand-in of Claude).", run)
    add_arguments(p)
    p.epilog = ("PostgreSQL through RECAP_BENCH_PG (default "
                "postgresql+psycopg://postgres@127.0.0.1:5432/postgres), Redis through "
                "RECAP_BENCH_REDIS (default redis://127.0.0.1:6379/13). "
                "docs/benchmarks/ explains each benchmark.")


def run(args: argparse.Namespace) -> int:
    from recap.bench.main import main

    return main(args, command=" ".join(["recap", *sys.argv[1:]]))
