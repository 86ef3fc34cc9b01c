"""``recap summarize SESSION_ID [--now | --force]``: queue a summarize job, or run it now.

Without ``--now`` a job is queued unless one is already pending. With ``--now``
the job runs in this process and its outcome is printed as JSON; a transient
error is recorded as ``failed`` and handed to a queued retry, and when more
work is left a follow-up job is queued.

``--force`` runs the job now as well, and condenses the session's candidate
batch (the oldest non-pinned messages outside the keep window, up to the batch
size) even when no rule fires yet; the run is recorded with mode ``forced``
(its reason starts with ``forced:``). ``recap context`` and ``recap stats`` say
why a session is not summarized yet and what will trigger it.
"""

from __future__ import annotations

import argparse

from recap.cli.base import Subparsers, command, emit_json, err, report_queued


def register(sub: Subparsers) -> None:
    p = command(sub, "summarize", "Queue a summarize job for a session, or run it now "
                "(--force: even if no rule fires yet).", run)
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--now", action="store_true",
                   help="run the job in this process and print its outcome as JSON")
    p.add_argument("--force", action="store_true",
                   help="run now (implies --now) and condense the candidate batch even if no "
                        "rule fires yet; recorded as mode 'forced'")


def run(args: argparse.Namespace) -> int:
    from recap.core.validate import check_session_id
    from recap.db import utcnow
    from recap.ops import requeue as ops
    from recap.settings import get_settings

    settings = get_settings()
    session_id = check_session_id(args.session_id)
    if not (args.now or args.force):
        return report_queued(ops.queue_jobs([session_id], settings=settings, now=utcnow()))
    return _summarize_now(session_id, force=args.force)


def _summarize_now(session_id: str, *, force: bool = False) -> int:
    import uuid

    from recap.db import transaction
    from recap.errors import ConfigError, SessionNotFound
    from recap.ops import requeue as ops
    from recap.worker.jobs.outcome import Job, is_transient
    from recap.worker.jobs.resources import get_resources
    from recap.worker.jobs.summarize import summarize

    with transaction() as db:
        if ops.missing_sessions([session_id], db=db):
            raise SessionNotFound(f"no chat session with id {session_id!r}")
    try:  # a ConfigError (no key, offline in production) before any claim
        res = get_resources()
    except ConfigError as exc:
        raise ConfigError(f"summarize --now/--force runs the configured summarizer in this "
                          f"process, and it cannot start: {exc}") from None
    # Not the final attempt: a transient error is recorded as 'failed' (not
    # dead-lettered for a cool-down) and handed to a queued job to retry.
    job = Job(task_id=f"cli-{uuid.uuid4()}", final_attempt=False)
    try:
        outcome = summarize(session_id, job=job, res=res, force=force)
    except Exception as exc:
        if is_transient(exc):
            # record_failure left the pending marker set for this retry.
            queued = ops.publish(session_id)
            err(f"a retry job was {'queued' if queued.status == 'queued' else 'not sent'}")
        raise
    emit_json(outcome.as_dict())
    if outcome.more_work:
        # apply_summary set the pending marker for exactly this follow-up.
        report_queued([ops.publish(session_id)])
    return 0
