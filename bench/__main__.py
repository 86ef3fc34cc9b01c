"""``python -m bench [--quick] [--only NAME,...] [--schema-aware] [--latency S] [--out FILE]``,
``python -m bench --compare REF [--only hook,loop] [--runs N] [--quick]``

The lab, run from a checkout (it is not in the installed package; the benchmarks a
user runs are ``recap bench``):

- ``verdict``: the defaults' verdict (bench.verdict): cost, specifics, answerable at
  reference and planted-fact QA of Recap's defaults against LangChain, LangMem, full
  history with caching, full history with tool-result clearing and with server-side
  compaction on nine workloads, the stand-in in neutral mode.
  ``--quick`` alone runs it on smaller workloads (about nine minutes on a shared
  2-core machine); ``--schema-aware`` against the stand-in's schema-aware answers
  instead (a mechanism test, not a comparison);
- ``prediction``: whether each fold's predicted saving ("a fold pays over N
  replies") holds in the session's own account N replies later, on the nine
  verdict workloads (bench.prediction);
- ``reach``: how many files and functions one reply and one job run through;
- ``realmodel``: what Recap keeps with a real model (hours on a CPU; by name only);
- ``--compare REF``: ``recap bench``'s hook or loop alternated between git REF and
  the working tree (bench.compare).

Each run has its own database, queue and stand-in (recap.bench.harness.env), and
prints Markdown tables; no assertions. ``python -m bench.metrics_scale`` and
``python -m bench.realmodel.server`` are tools of their own.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from recap.bench.harness import env as benv
from recap.bench.main import JSON_NAMES, run_all

PROG = "python -m bench"
# Each lab benchmark's module, with a run(quick=...) -> str.
MODULES = {"verdict": "bench.verdict.main", "reach": "bench.reach",
           "realmodel": "bench.realmodel", "prediction": "bench.prediction"}
NAMES = tuple(MODULES)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description="The benchmark lab, run from a "
                                     "checkout: the verdict, reach, real models, --compare.")
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes; alone: the defaults' verdict on nine workloads "
                             "(about 9 minutes)")
    parser.add_argument("--only", default="", metavar="NAME,...",
                        help="comma-separated: " + ", ".join(NAMES) + "; with --compare: "
                             + ", ".join(JSON_NAMES))
    parser.add_argument("--latency", type=float, default=benv.DEFAULT_LATENCY_S,
                        help="stand-in latency per Claude call in seconds (default 0.8)")
    parser.add_argument("--out", type=Path, metavar="FILE",
                        help="also write the tables to this file")
    parser.add_argument("--compare", metavar="REF",
                        help="alternate runs of recap bench's benchmarks between git REF and "
                             "the working tree (see bench.compare); default --only hook")
    parser.add_argument("--runs", type=int, default=3, help="--compare: runs per side")
    parser.add_argument("--schema-aware", action="store_true",
                        help="verdict: the stand-in's schema-aware answers instead of its "
                             "neutral mode (a mechanism test, not a comparison)")
    args = parser.parse_args(argv)
    known = JSON_NAMES if args.compare else NAMES
    chosen = [n.strip() for n in args.only.split(",") if n.strip()] or (
        ["hook"] if args.compare else ["verdict"] if args.quick else ["verdict", "reach"])
    unknown = [n for n in chosen if n not in known]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(known)}"
                     + (" (--compare takes recap bench's benchmarks with figures)"
                        if args.compare else ""))
    if args.latency < 0:
        parser.error("--latency must be >= 0")
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    args.names = chosen
    return args


def run_one(name: str, args: argparse.Namespace) -> str:
    module = importlib.import_module(MODULES[name])
    extra = {"schema_aware": True} if name == "verdict" and args.schema_aware else {}
    text: str = module.run(quick=args.quick, **extra)
    return text


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.compare:
        from bench.compare import compare

        compare(args.compare, args.names, runs=args.runs, quick=args.quick)
        return 0
    given = sys.argv[1:] if argv is None else argv
    return run_all(args.names, lambda name: run_one(name, args),
                   command=" ".join([PROG, *given]), latency=args.latency, out=args.out)


if __name__ == "__main__":
    sys.exit(main())
