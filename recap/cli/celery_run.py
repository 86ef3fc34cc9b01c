"""``recap worker [CELERY OPTIONS]`` and ``recap beat [CELERY OPTIONS]``: Celery's own
worker and beat on Recap's app, so nobody types a module path.

Everything after the command goes to Celery unchanged (``recap worker -Q recap
--concurrency 4 --loglevel INFO``, ``recap worker --help`` for Celery's options);
``celery -A recap worker`` is the same thing for operators who prefer it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from recap.cli.base import Subparsers

# The commands that hand their arguments to Celery (recap.cli.main routes them
# here before its own parser, which would take Celery's options as its own).
COMMANDS = {
    "worker": "Start a Celery worker on Recap's app (options after it go to Celery).",
    "beat": "Start Celery beat, the sweeper's clock, on Recap's app (one only).",
}


def register(sub: Subparsers) -> None:
    """List the commands in ``recap --help``; main() hands their arguments to
    :func:`start` before its parser sees them."""
    for name, help_ in COMMANDS.items():
        sub.add_parser(name, help=help_, description=help_, add_help=False)


def start(name: str, argv: Sequence[str]) -> int:
    """Run Celery's ``name`` command on Recap's app; returns its exit code."""
    from celery.signals import worker_ready

    from recap.worker.celery_app import app

    if name == "worker":
        worker_ready.connect(announce_ready, weak=False)
    code = app.start(argv=[name, *argv])
    return code if isinstance(code, int) else 0


def announce_ready(sender: Any = None, **_: Any) -> None:
    """One line on stdout when the worker takes jobs, whatever its log level: the
    queues it consumes and the broker (without its password)."""
    queues = ", ".join(sorted(q.name for q in sender.task_consumer.queues))
    broker = sender.app.connection_for_read().as_uri()
    # The real stdout: Celery has redirected sys.stdout into its log by now.
    print(f"recap worker ready: consuming {queues} from {broker}",
          file=sys.__stdout__ or sys.stdout, flush=True)
