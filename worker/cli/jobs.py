"""``recap`` commands that queue or run jobs: retry, summarize, sweep, resummarize,
configure, demo, bench."""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from worker.cli.base import emit_json, err

# -- retry, summarize, sweep ----------------------------------------------------

def _report_queued(results: Sequence[Any]) -> int:
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


def cmd_retry(args: argparse.Namespace) -> int:
    from worker.core.validate import check_session_id
    from worker.db import transaction, utcnow
    from worker.jobs import ops
    from worker.settings import get_settings

    settings = get_settings()
    if args.all_dead:
        with transaction() as s:
            ids = ops.dead_session_ids(db=s)
        if not ids:
            print("no dead sessions")
            return 0
    else:
        ids = [check_session_id(args.session_id)]
    return _report_queued(ops.queue_jobs(ids, settings=settings, now=utcnow(), unblock=True))


def cmd_summarize(args: argparse.Namespace) -> int:
    from worker.core.validate import check_session_id
    from worker.db import utcnow
    from worker.jobs import ops
    from worker.settings import get_settings

    settings = get_settings()
    session_id = check_session_id(args.session_id)
    if not args.now:
        return _report_queued(ops.queue_jobs([session_id], settings=settings, now=utcnow()))
    return _summarize_now(session_id, settings)


def _summarize_now(session_id: str, settings: Any) -> int:
    from worker.db import transaction
    from worker.errors import SessionNotFound
    from worker.jobs import ops
    from worker.jobs.outcome import Job, is_transient
    from worker.jobs.resources import get_resources
    from worker.jobs.summarize import summarize

    with transaction() as s:
        if ops.missing_sessions([session_id], db=s):
            raise SessionNotFound(f"no chat session with id {session_id!r}")
    res = get_resources()  # a ConfigError (e.g. offline in production) before any claim
    # Not the final attempt: a transient error is recorded as 'failed' (not
    # dead-lettered for a cool-down) and handed to a queued job to retry.
    job = Job(task_id=f"cli-{uuid.uuid4()}", final_attempt=False)
    try:
        outcome = summarize(session_id, job=job, res=res)
    except Exception as exc:
        if is_transient(exc):
            # record_failure left the pending marker set for this retry.
            queued = ops.publish(session_id)
            err(f"a retry job was {'queued' if queued.status == 'queued' else 'not sent'}")
        raise
    emit_json(outcome.as_dict())
    if outcome.more_work:
        # apply_summary set the pending marker for exactly this follow-up.
        _report_queued([ops.publish(session_id)])
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from worker.jobs.sweeper import sweep
    from worker.settings import get_settings

    settings = get_settings()
    if not args.all:
        print(f"queued {sweep(settings)} sessions")
        return 0
    return _sweep_all(settings, batch=args.batch or settings.sweep_batch)


def _sweep_all(settings: Any, *, batch: int) -> int:
    from worker.db import utcnow
    from worker.errors import BrokerUnavailable
    from worker.jobs import ops

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



def cmd_resummarize(args: argparse.Namespace) -> int:
    from worker.jobs.archive import resummarize
    from worker.jobs.resources import get_resources

    emit_json(resummarize(args.session_id, res=get_resources()).as_dict())
    return 0


def cmd_configure(args: argparse.Namespace) -> int:
    from worker.api.sessions import configure_session
    from worker.errors import InvalidInput

    overrides: dict[str, Any] = {}
    for pair in args.settings:
        key, sep, value = pair.partition("=")
        if not sep:
            raise InvalidInput(f"expected KEY=VALUE, got {pair!r}")
        overrides[key.strip()] = value.strip()
    stored = configure_session(args.session_id, None if args.clear else overrides)
    emit_json({"session_id": args.session_id, "overrides": stored})
    return 0


# -- placeholders wired to other modules ------------------------------------------

def cmd_demo(args: argparse.Namespace) -> int:
    import importlib

    result = importlib.import_module("worker.demo.run").main(args)
    return result if isinstance(result, int) else 0


def cmd_bench(args: argparse.Namespace) -> int:
    import runpy

    import worker

    # bench/ lives in the checkout next to worker/, and is not an installed package.
    root = Path(worker.__file__).resolve().parent.parent
    if (root / "bench").is_dir() and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    import importlib.util

    from worker.errors import RecapError

    try:
        found = importlib.util.find_spec("bench.__main__") is not None
    except ImportError:
        found = False
    if not found:
        raise RecapError(f"no benchmarks found: expected {root / 'bench' / '__main__.py'}")
    argv = list(args.bench_args)
    sys.argv = ["bench", *(argv[1:] if argv[:1] == ["--"] else argv)]
    try:
        runpy.run_module("bench", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


