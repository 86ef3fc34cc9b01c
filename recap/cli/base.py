"""What the ``recap`` commands share: adding a command, output helpers, progress on a
terminal, the queued report."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, TextIO, TypeAlias

if TYPE_CHECKING:
    from recap.ops.requeue import Queued

    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Subparsers = argparse._SubParsersAction

PROG = "recap"


def command(sub: Subparsers, name: str, help_: str,
            run: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    """Add the command ``name``: ``help_`` heads both its --help and ``recap --help``."""
    parser = sub.add_parser(name, help=help_, description=help_)
    parser.set_defaults(func=run)
    return parser


def whole_number(text: str, minimum: int) -> int:
    """An argparse value: a whole number of at least ``minimum``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
    return value


def positive(text: str) -> int:
    return whole_number(text, 1)


def glossary(entries: Mapping[str, str], *, aligned: bool = False) -> str:
    """``entries`` for an epilog: one indented, aligned line each, or ``key: text; ...``."""
    if aligned:
        width = max(map(len, entries))
        return "\n".join(f"  {key:<{width}}  {text}" for key, text in entries.items())
    return "; ".join(f"{key}: {text}" for key, text in entries.items())


def emit_json(data: object) -> None:
    print(json.dumps(data, indent=2, default=str, ensure_ascii=False))


def err(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)


class Progress:
    """A long command's progress: one line per step on stderr, saying what is left,
    and only when stderr is a terminal (a pipe, a log file or a cron job's mail
    gets none; stdout, the command's answer, never does)::

        recap db upgrade: 3/20 migrations (17 left): 0002 -> 0003, normal blocked under
    """

    def __init__(self, command: str, *, stream: TextIO | None = None) -> None:
        self.command = command
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.on = bool(isatty and isatty())

    def step(self, done: int, total: int | None, what: str, note: str = "") -> None:
        """``done`` of ``total`` (None: not known) ``what`` are done; ``note`` says which."""
        if not self.on:
            return
        count = (f"{done} {what}" if total is None
                 else f"{done}/{total} {what} ({max(0, total - done)} left)")
        print(f"{PROG} {self.command}: {count}" + (f": {note}" if note else ""),
              file=self.stream, flush=True)

    @contextlib.contextmanager
    def reported(self) -> Iterator[None]:
        """Show the steps Recap's own work reports (recap.progress: the summarizer's
        chunks) while the block runs."""
        from recap import progress

        if not self.on:
            yield
            return
        with progress.listening(lambda what, done, total: self.step(done, total, what)):
            yield


def report_queued(results: Sequence[Queued]) -> int:
    """One line per session: queued (with the task id), already pending, or not sent
    (an error: exit 1)."""
    code = 0
    for r in results:
        if r.status == "queued":
            print(f"{r.session_id}: queued summarize job {r.task_id or '(id unknown)'}")
        elif r.status == "already pending":
            print(f"{r.session_id}: a summarize job is already pending")
        else:
            err(f"error: {r.session_id}: could not publish the job (broker unreachable?); "
                "the sweeper will retry")
            code = 1
    return code
