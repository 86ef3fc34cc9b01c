"""``recap bench [ARGS ...]``: run the benchmarks (``python -m bench``) from the
checkout (or from ``bench/`` on the path, as in the image); every argument passes
through (a leading ``--`` is dropped), and so does bench's exit code."""

from __future__ import annotations

import argparse

from recap.cli.base import Subparsers, command


def register(sub: Subparsers) -> None:
    p = command(sub, "bench",
                "Run the benchmarks (python -m bench); arguments pass through.", run)
    p.add_argument("bench_args", nargs=argparse.REMAINDER, metavar="ARGS")


def run(args: argparse.Namespace) -> int:
    import importlib.util
    import runpy
    import sys
    from pathlib import Path

    import recap
    from recap.errors import RecapError

    # bench/ lives in the checkout beside the package's folder, not in the package.
    root = Path(recap.__file__).resolve().parent.parent
    if (root / "bench").is_dir() and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        found = importlib.util.find_spec("bench.__main__") is not None
    except ImportError:
        found = False
    if not found:
        raise RecapError(f"no benchmarks found: expected {root / 'bench' / '__main__.py'}")
    argv = list(args.bench_args)
    sys.argv = ["bench", *(argv[1:] if argv[:1] == ["--"] else argv)]
    try:
        runpy.run_module("bench", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0
