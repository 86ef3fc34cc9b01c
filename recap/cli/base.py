"""What the ``recap`` commands share: adding a command, output helpers, the queued report."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

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
