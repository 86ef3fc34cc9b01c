"""``recap eval [--quick] [--qa] [--conversation FILE --expect FILE]``: how many planted
specifics Recap and its peers keep after each fold (see worker.evals.main)."""

from __future__ import annotations

import argparse

from worker.cli.base import Subparsers, command, positive

QUICK_MESSAGES, QUICK_FACTS = 200, 12  # --quick: offline, well under a minute
FULL_MESSAGES, FULL_FACTS = 1000, 40  # the whole demo conversation
DEFAULT_LOSS = 0.3  # --quick: share of specifics the stand-in drops from each answer


def register(sub: Subparsers) -> None:
    p = command(sub, "eval", "Measure what Recap and its peers keep of planted facts.", run)
    p.add_argument("--quick", action="store_true",
                   help=f"{QUICK_MESSAGES} messages, {QUICK_FACTS} facts, against a local "
                        "lossy stand-in of the Messages API (offline, under a minute)")
    p.add_argument("--messages", type=positive, metavar="N",
                   help=f"messages of the demo conversation (default {FULL_MESSAGES}, "
                        f"{QUICK_MESSAGES} with --quick)")
    p.add_argument("--facts", type=positive, metavar="N",
                   help=f"facts to plant (default {FULL_FACTS}, {QUICK_FACTS} with --quick)")
    p.add_argument("--conversation", metavar="FILE",
                   help="your own conversation: JSON lines {\"role\", \"content\"}")
    p.add_argument("--expect", metavar="FILE",
                   help="with --conversation: JSON lines {\"expected\", \"question\"?}")
    p.add_argument("--qa", action="store_true",
                   help="also ask each planted question from the final context alone")
    p.add_argument("--loss", type=float, default=DEFAULT_LOSS, metavar="SHARE",
                   help=f"with --quick: share of specifics the stand-in drops from each "
                        f"answer (default {DEFAULT_LOSS})")
    p.add_argument("--seed", type=int, default=7, help="planting and loss seed (default 7)")
    p.add_argument("--no-peers", action="store_true", help="Recap only")


def run(args: argparse.Namespace) -> int:
    from worker.errors import ConfigError
    from worker.evals.main import main

    if not 0.0 <= args.loss < 1.0:
        raise ConfigError(f"--loss must be in [0, 1), got {args.loss}")
    args.messages = args.messages or (QUICK_MESSAGES if args.quick else FULL_MESSAGES)
    args.facts = args.facts or (QUICK_FACTS if args.quick else FULL_FACTS)
    return main(args)
