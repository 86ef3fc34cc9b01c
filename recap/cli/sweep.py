"""``recap sweep [--all [--batch N]]``: queue sessions that need a summary and have no job.

One pass queues what the periodic sweeper would (``queued N sessions``).
``--all`` backfills every due session, N per batch (default RECAP_SWEEP_BATCH),
until none is left; interrupted (exit 130) or with the broker down (exit 1), it
says how far it got, and a rerun continues.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from recap.cli.base import Subparsers, command, err, positive

if TYPE_CHECKING:
    from recap.settings import Settings


def register(sub: Subparsers) -> None:
    p = command(sub, "sweep", "Queue sessions that need a summary and have no job.", run)
    p.add_argument("--all", action="store_true",
                   help="backfill every due session, in batches, until none is left")
    p.add_argument("--batch", type=positive, metavar="N",
                   help="sessions per batch with --all (default RECAP_SWEEP_BATCH)")


def run(args: argparse.Namespace) -> int:
    from recap.settings import get_settings
    from recap.worker.jobs.sweeper import sweep

    settings = get_settings()
    if not args.all:
        print(f"queued {sweep(settings)} sessions")
        return 0
    return _sweep_all(settings, batch=args.batch or settings.sweep_batch)


def _sweep_all(settings: Settings, *, batch: int) -> int:
    from recap.db import utcnow
    from recap.errors import BrokerUnavailable
    from recap.ops import requeue as ops

    progress = ops.Backfill()
    live = sys.stderr.isatty()

    def show(p: ops.Backfill) -> None:
        if live:
            print(f"\rsweep: {p.batches} batches, {p.queued} queued", end="",
                  file=sys.stderr, flush=True)

    try:
        ops.backfill(settings, batch=batch, now=utcnow, progress=progress, on_batch=show)
    except KeyboardInterrupt:
        _finish_line(live)
        err(f"interrupted after {progress.queued} sessions queued "
            f"(up to session id {progress.last_id!r}); rerun to continue")
        return 130
    except BrokerUnavailable as exc:
        _finish_line(live)
        err(f"error: {exc}; stopped after {progress.queued} sessions queued")
        return 1
    _finish_line(live)
    print(f"queued {progress.queued} sessions in {progress.batches} batches")
    return 0


def _finish_line(live: bool) -> None:
    if live:
        print(file=sys.stderr)
