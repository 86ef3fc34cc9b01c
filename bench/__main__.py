"""``python -m bench [--quick] [--only NAME,...] [--latency S] [--out FILE] [--json]``,
``python -m bench --compare REF [--only NAME,...] [--runs N] [--quick]``

Runs the benchmarks against a private PostgreSQL database (recap_bench_<hex>,
dropped after), a private Redis queue (db 13) and the local Claude stand-in, and
prints a Markdown table per benchmark. ``--quick`` alone prints the defaults'
verdict (bench.verdict: cost, specifics, answerable at reference and planted-fact
QA of Recap's defaults against LangChain, LangMem and full history with caching on
seven workloads, smaller ones, the same code, the stand-in in neutral mode; about
nine minutes on a shared 2-core machine); ``--schema-aware`` runs the verdict
against the stand-in's schema-aware answers instead. With ``--only NAME`` it runs
those benchmarks at smaller sizes.
Figures go to stdout (and ``--out``); plots to docs/bench/*.png. No assertions:
targets are printed next to the figures.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from bench import env as benv

NAMES = ("hook", "coldstart", "loop", "reply_path", "overhead", "throughput", "tokens",
         "context", "scale", "memory", "specifics", "scan", "cost", "reach", "http",
         "middleware", "verdict", "recall", "realmodel")


# The benchmarks that print machine-readable figures (--json), so --compare takes them.
JSON_NAMES = ("hook", "loop")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="alone: the defaults' verdict on seven workloads (about 9 "
                             "minutes); "
                             "with --only: smaller sizes")
    parser.add_argument("--only", default="", help="comma-separated: " + ",".join(NAMES))
    parser.add_argument("--latency", type=float, default=benv.DEFAULT_LATENCY_S,
                        help="stand-in latency per Claude call in seconds (default 0.8)")
    parser.add_argument("--out", type=Path, help="also write the tables to this file")
    parser.add_argument("--json", action="store_true",
                        help="print each benchmark's figures as one JSON line (" +
                             ", ".join(JSON_NAMES) + ")")
    parser.add_argument("--compare", metavar="REF",
                        help="alternate runs of the chosen benchmarks between git REF and "
                             "the working tree (see bench.compare); default --only hook")
    parser.add_argument("--runs", type=int, default=3, help="--compare: runs per side")
    parser.add_argument("--schema-aware", action="store_true",
                        help="verdict: the stand-in's schema-aware answers instead of its "
                             "neutral mode (a mechanism test, not a comparison)")
    args = parser.parse_args(argv)
    if args.compare and not args.only:
        args.only = "hook"
    # A full run leaves out "realmodel" (hours on a CPU; asked for by name).
    chosen = [n.strip() for n in args.only.split(",") if n.strip()] or (
        ["verdict"] if args.quick else [n for n in NAMES if n != "realmodel"])
    unknown = [n for n in chosen if n not in NAMES]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(NAMES)}")
    if args.latency < 0:
        parser.error("--latency must be >= 0")
    if (args.json or args.compare) and [n for n in chosen if n not in JSON_NAMES]:
        parser.error(f"--json and --compare take only {', '.join(JSON_NAMES)}")
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    args.names = chosen
    return args


def _version(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({exc})"


def machine() -> str:
    from sqlalchemy import text

    from recap.db import transaction

    with transaction() as s:
        pg = s.execute(text("SHOW server_version")).scalar_one()
    import redis

    info = redis.Redis.from_url(benv.REDIS_URL).info("server")
    mem = _version(["free", "-g"]).splitlines()
    return (f"- nproc: {os.cpu_count()}; load average at start: "
            f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
            f"- memory (free -g): {mem[1].split()[1] if len(mem) > 1 else '?'} GiB total\n"
            f"- Python {platform.python_version()}, PostgreSQL {pg}, "
            f"Redis {info['redis_version']}\n"
            f"- command: python -m bench {' '.join(sys.argv[1:])}\n")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.compare:
        from bench.compare import compare

        compare(args.compare, args.names, runs=args.runs, quick=args.quick)
        return 0
    started = time.monotonic()
    benv.setup(args.latency)
    out = []
    failed = []
    try:
        head = machine()
        if not args.json:
            print(head)
        out.append(head)
        for name in args.names:
            t0 = time.monotonic()
            try:
                module = importlib.import_module(f"bench.{name}")
                extra = {"schema_aware": True} if name == "verdict" and args.schema_aware else {}
                out.append(module.run(quick=args.quick, as_json=True) if args.json
                           else module.run(quick=args.quick, **extra))
            except Exception as exc:  # one broken benchmark must not hide the others
                import traceback

                traceback.print_exc()
                failed.append(f"{name}: {type(exc).__name__}: {exc}")
            print(f"({name} took {time.monotonic() - t0:.0f}s)", flush=True)
    finally:
        benv.teardown()
    summary = f"\ntotal {time.monotonic() - started:.0f}s"
    if failed:
        summary += "\nFAILED: " + "; ".join(failed)
    print(summary)
    if args.out:
        args.out.write_text("".join(out) + summary + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
