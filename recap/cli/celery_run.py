"""``recap worker [CELERY OPTIONS]`` and ``recap beat [CELERY OPTIONS]``: Celery's own
worker and beat on Recap's app, so nobody types a module path.

Everything after the command goes to Celery unchanged (``recap worker -Q recap
--concurrency 4``, ``recap worker --help`` for Celery's options); ``celery -A
recap worker`` is the same thing for operators who prefer it, at Celery's own
default level (WARNING).

``recap worker`` logs at INFO unless ``--loglevel``/``-l`` says otherwise, and at
INFO a job is one line (:class:`OneLinePerJob`): a summarize job's JSON outcome
line, Celery's ``succeeded``/``retry``/``raised`` line for the others;
``--loglevel DEBUG`` shows every line, ``--loglevel WARNING`` only problems.
"""

from __future__ import annotations

import logging
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


# The worker's level unless told otherwise: a line per job (Celery's is WARNING).
WORKER_LOGLEVEL = "INFO"


def start(name: str, argv: Sequence[str]) -> int:
    """Run Celery's ``name`` command on Recap's app; returns its exit code."""
    from celery.signals import after_setup_logger, worker_ready

    from recap.worker.celery_app import app

    if name == "worker":
        worker_ready.connect(announce_ready, weak=False)
        after_setup_logger.connect(one_line_per_job, weak=False)
        if not has_loglevel(argv):
            argv = [*argv, "--loglevel", WORKER_LOGLEVEL]
    code = app.start(argv=[name, *argv])
    return code if isinstance(code, int) else 0


def has_loglevel(argv: Sequence[str]) -> bool:
    """Whether Celery's arguments set the log level (``-l X``, ``-lX``, ``--loglevel[=X]``)."""
    return any(a == "--loglevel" or a.startswith("--loglevel=")
               or (a.startswith("-l") and not a.startswith("--")) for a in argv)


class OneLinePerJob(logging.Filter):
    """Celery's per-task INFO lines that repeat a job's own line: ``received`` (every
    job, before it does anything) and ``succeeded`` of the jobs that log their own
    outcome as a JSON line (summarize; titles: Celery's line is kept, the JSON
    line of a title that went well is dropped). Warnings and errors always pass."""

    SUMMARIZE = "recap.tasks.summarize_session"

    def filter(self, record: logging.LogRecord) -> bool:
        from celery.app.trace import LOG_RECEIVED, LOG_SUCCESS

        if record.levelno != logging.INFO:
            return True
        if record.msg is LOG_RECEIVED:
            return False
        data = getattr(record, "data", None)
        if record.msg is LOG_SUCCESS and isinstance(data, dict):
            return data.get("name") != self.SUMMARIZE
        return not record.name.startswith("recap.titles")


def one_line_per_job(loglevel: int | str | None = None, **_: Any) -> None:
    """At INFO, keep one line per job (:class:`OneLinePerJob`); at DEBUG, every line."""
    level = logging.getLevelName(loglevel) if isinstance(loglevel, str) else loglevel
    if level != logging.INFO:
        return
    for name in ("celery.worker.strategy", "celery.app.trace", "recap.titles"):
        logging.getLogger(name).addFilter(OneLinePerJob())


def announce_ready(sender: Any = None, **_: Any) -> None:
    """One line on stdout when the worker takes jobs, whatever its log level: the
    queues it consumes and the broker (without its password)."""
    queues = ", ".join(sorted(q.name for q in sender.task_consumer.queues))
    broker = sender.app.connection_for_read().as_uri()
    # The real stdout: Celery has redirected sys.stdout into its log by now.
    print(f"recap worker ready: consuming {queues} from {broker}",
          file=sys.__stdout__ or sys.stdout, flush=True)
