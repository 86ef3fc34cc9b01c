"""``python -m recap.bench [--only NAME,...] [--quick] [--latency S] [--out FILE]
[--plots DIR] [--json]``: the same run as ``recap bench`` (recap.bench.main)."""

from __future__ import annotations

import argparse
import sys

from recap.bench.main import add_arguments, main
from recap.errors import RecapError

PROG = "python -m recap.bench"


def cli(argv: list[str] | None = None) -> int:
    import recap.bench

    parser = argparse.ArgumentParser(prog=PROG, description=recap.bench.__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    try:
        return main(args, command=" ".join([PROG, *given]))
    except RecapError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(cli())
