"""``recap eval [--quick] [--qa] [--conversation FILE --expect FILE] [--base-url URL
--model NAME]``: how many planted specifics Recap and its peers keep after each fold
(see recap.evals.main). With ``--base-url``, against any server that speaks the
Messages API (a local llama.cpp or vLLM server, a proxy): see docs/EVALUATION.md.
On a terminal, stderr also shows each chunk a summary call folds and, after each
of Recap's folds, how many of the conversation's messages are left."""

from __future__ import annotations

import argparse

from recap.cli.base import Progress, Subparsers, command, positive, whole_number
from recap.evals.probes import DEFAULT_PROBES

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
    p.add_argument("--probes", type=lambda text: whole_number(text, 0), default=DEFAULT_PROBES,
                   metavar="N",
                   help=f"later user turns that ask for a planted specific (default "
                        f"{DEFAULT_PROBES}; 0: none), judged on the request Recap builds for "
                        "the reply: answerable at reference k/n")
    p.add_argument("--base-url", metavar="URL",
                   help="evaluate the model behind URL, any server speaking the Messages "
                        "API (llama.cpp, vLLM, a proxy); needs --model")
    p.add_argument("--model", metavar="NAME", help="with --base-url: the model to ask for")
    p.add_argument("--api-key", metavar="KEY",
                   help="with --base-url: the key the server wants (default: "
                        "ANTHROPIC_API_KEY, else a placeholder; local servers need none)")


def run(args: argparse.Namespace) -> int:
    from recap.errors import ConfigError
    from recap.evals.main import main

    if not 0.0 <= args.loss < 1.0:
        raise ConfigError(f"--loss must be in [0, 1), got {args.loss}")
    if args.base_url and args.quick:
        raise ConfigError("--base-url evaluates a real server; --quick the built-in stand-in: "
                          "choose one")
    if bool(args.base_url) != bool(args.model):
        raise ConfigError("--base-url and --model go together: the server's URL and the "
                          "model name it serves")
    if args.base_url and not args.base_url.startswith(("http://", "https://")):
        raise ConfigError(f"--base-url must be an http:// or https:// URL, got "
                          f"{args.base_url!r}")
    args.messages = args.messages or (QUICK_MESSAGES if args.quick else FULL_MESSAGES)
    args.facts = args.facts or (QUICK_FACTS if args.quick else FULL_FACTS)
    with Progress("eval").reported():
        return main(args)
