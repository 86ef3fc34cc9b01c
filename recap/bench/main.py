"""The runner behind ``recap bench`` and ``python -m recap.bench``: its options, the
machine header, and each chosen benchmark in turn on one private environment.

A benchmark that fails (or needs a package of the bench extra that is missing) is
reported and the others still run; the exit code is 1 if any failed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import subprocess
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from recap.bench.harness import env as benv
from recap.bench.harness.extras import MissingExtra
from recap.errors import ConfigError

# Every benchmark, by the name --only takes (its module under recap.bench).
NAMES = ("hook", "coldstart", "loop", "reply_path", "overhead", "throughput", "tokens",
         "context", "scale", "memory", "specifics", "scan", "cost", "http", "middleware",
         "recall", "spend")
# The benchmarks that print machine-readable figures (--json).
JSON_NAMES = ("hook", "loop")


def names(text: str) -> list[str]:
    """An argparse value: comma-separated benchmark names, each one of :data:`NAMES`."""
    chosen = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in NAMES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown benchmark(s) {', '.join(unknown)}; "
                                         f"choose from {', '.join(NAMES)}")
    return chosen


def latency(text: str) -> float:
    """An argparse value: seconds, at least 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``recap bench`` (and of ``python -m recap.bench``)."""
    parser.add_argument("--only", type=names, default=[], metavar="NAME,...",
                        help="run these benchmarks (default: all): " + ", ".join(NAMES))
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes: minutes instead of tens of minutes")
    parser.add_argument("--latency", type=latency, default=benv.DEFAULT_LATENCY_S,
                        metavar="SECONDS",
                        help=f"the Claude stand-in's latency per call (default "
                             f"{benv.DEFAULT_LATENCY_S})")
    parser.add_argument("--out", type=Path, metavar="FILE",
                        help="also write the tables to this file")
    parser.add_argument("--plots", type=Path, metavar="DIR",
                        help="draw the plots (throughput, tokens, context, cost) as PNG files "
                             "in DIR; needs the bench extra")
    parser.add_argument("--json", action="store_true",
                        help="print each benchmark's figures as one JSON line (" +
                             ", ".join(JSON_NAMES) + " only)")


def _version(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({exc})"


def machine(command: str) -> str:
    """The header of a run: cores, load, memory, versions and ``command``."""
    import redis
    from sqlalchemy import text

    from recap.db import transaction

    with transaction() as s:
        pg = s.execute(text("SHOW server_version")).scalar_one()
    info = redis.Redis.from_url(benv.REDIS_URL).info("server")
    mem = _version(["free", "-g"]).splitlines()
    return (f"- nproc: {os.cpu_count()}; load average at start: "
            f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
            f"- memory (free -g): {mem[1].split()[1] if len(mem) > 1 else '?'} GiB total\n"
            f"- Python {platform.python_version()}, PostgreSQL {pg}, "
            f"Redis {info['redis_version']}\n"
            f"- command: {command}\n")


def run_module(name: str, *, quick: bool, as_json: bool) -> str:
    """Run the benchmark ``name``; its output (it prints its tables as it goes)."""
    module = importlib.import_module(f"recap.bench.{name}")
    text: str = module.run(quick=quick, as_json=True) if as_json else module.run(quick=quick)
    return text


def main(args: argparse.Namespace, *, command: str) -> int:
    """Run the benchmarks ``args`` chose (``command``: how, for the header); 1 if any
    failed. ConfigError for --json with a benchmark that has no JSON figures."""
    chosen = args.only or list(NAMES)
    if args.json and (other := [n for n in chosen if n not in JSON_NAMES]):
        raise ConfigError(f"--json takes only {', '.join(JSON_NAMES)}, not {', '.join(other)}")
    benv.plot_to(args.plots)
    return run_all(chosen, lambda name: run_module(name, quick=args.quick, as_json=args.json),
                   command=command, latency=args.latency, out=args.out, quiet=args.json)


def run_all(names: list[str], run_one: Callable[[str], str], *, command: str, latency: float,
            out: Path | None, quiet: bool = False) -> int:
    """Set up one environment (the stand-in at ``latency``), run ``run_one`` for each of
    ``names``, tear down; the tables also go to ``out``. ``quiet``: no header on stdout
    (machine-readable output). 1 if any failed."""
    started = time.monotonic()
    benv.setup(latency)
    texts, failed = [], []
    try:
        head = machine(command)
        if not quiet:
            print(head)
        texts.append(head)
        for name in names:
            t0 = time.monotonic()
            try:
                texts.append(run_one(name))
            except MissingExtra as exc:
                failed.append(f"{name}: {exc}")
            except Exception as exc:  # one broken benchmark must not hide the others
                traceback.print_exc()
                failed.append(f"{name}: {type(exc).__name__}: {exc}")
            print(f"({name} took {time.monotonic() - t0:.0f}s)", flush=True)
    finally:
        benv.teardown()
    summary = f"\ntotal {time.monotonic() - started:.0f}s"
    if failed:
        summary += "\nFAILED: " + "; ".join(failed)
    print(summary)
    if out:
        out.write_text("".join(texts) + summary + "\n", encoding="utf-8")
    return 1 if failed else 0
