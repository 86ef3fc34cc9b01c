"""``recap worker [CELERY OPTIONS]`` and ``recap beat [CELERY OPTIONS]``: Celery's own
worker and beat on Recap's app, so nobody types a module path.

Everything after the command goes to Celery unchanged (``recap worker -Q recap
--concurrency 4 --loglevel INFO``, ``recap worker --help`` for Celery's options);
``celery -A recap worker`` is the same thing for operators who prefer it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from recap.cli.base import Subparsers

# The commands that hand their arguments to Celery (recap.cli.main routes them
# here before its own parser, which would take Celery's options as its own).
COMMANDS = {
    "worker": "Start a Celery worker on Recap's app (options after it go to Celery).",
    "beat": "Start Celery beat, the sweeper's clock, on Recap's app (one only).",
}


def register(sub: Subparsers) -> None:
    for name, help_ in COMMANDS.items():
        # Listed in `recap --help`; main() never parses their arguments itself.
        p = sub.add_parser(name, help=help_, description=help_, add_help=False)
        p.add_argument("celery_args", nargs=argparse.REMAINDER, metavar="CELERY OPTIONS")
        p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return start(args.command, args.celery_args)


def start(name: str, argv: Sequence[str]) -> int:
    """Run Celery's ``name`` command on Recap's app; returns its exit code."""
    from recap.celery_app import app

    code = app.start(argv=[name, *argv])
    return code if isinstance(code, int) else 0
