"""``recap``: the operator's command line (ingest, context, stats, failures, retry, ...).

Exit codes: 0 ok, 1 a Recap error (printed as ``recap: error: ...``, no
traceback), 2 a usage error, 130 interrupted. Building the parser imports
nothing from Recap, so ``recap --help`` works without settings or services;
each command imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

PROG = "recap"
REQUIRED_FIELDS = ("session_id", "role", "content")
KNOWN_FIELDS = frozenset((*REQUIRED_FIELDS, "pinned"))


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _emit_json(data: object) -> None:
    print(json.dumps(data, indent=2, default=str, ensure_ascii=False))


def _err(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)


# -- ingest -------------------------------------------------------------------

def _open_input(name: str) -> IO[str]:
    # surrogateescape: a line with broken UTF-8 becomes one bad line (add_message
    # rejects lone surrogates), instead of aborting the whole file.
    if name == "-":
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is None:
            return sys.stdin
        return io.TextIOWrapper(buffer, encoding="utf-8", errors="surrogateescape")
    try:
        return open(name, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
    except OSError as exc:
        from worker.errors import InvalidInput

        raise InvalidInput(f"cannot read {name}: {exc.strerror}") from None


def parse_line(line: str) -> tuple[str, str, str, bool]:
    """One JSON line -> (session_id, role, content, pinned); InvalidInput names the problem."""
    from worker.errors import InvalidInput

    try:
        record = json.loads(line)
    except ValueError as exc:
        raise InvalidInput(f"invalid JSON: {exc}") from None
    if not isinstance(record, dict):
        raise InvalidInput(f"expected a JSON object, got {type(record).__name__}")
    missing = [f for f in REQUIRED_FIELDS if f not in record]
    if missing:
        raise InvalidInput("missing field " + ", ".join(missing))
    # A typo such as "pined" must not silently drop a pin: pinned messages are
    # the ones Recap promises never to summarize away.
    unknown = sorted(set(record) - KNOWN_FIELDS)
    if unknown:
        raise InvalidInput("unknown field " + ", ".join(unknown))
    return record["session_id"], record["role"], record["content"], record.get("pinned", False)


def cmd_ingest(args: argparse.Namespace) -> int:
    counts = {"added": 0, "bad": 0, "queued": 0, "line": 0}
    try:
        with _open_input(args.file) as stream:
            code = _ingest(stream, counts, strict=args.strict)
    except KeyboardInterrupt:
        # A migration resumes from here: every line before this one is stored.
        _err(f"interrupted at line {counts['line']}; lines before it were processed")
        code = 130
    print(f"added {counts['added']}, bad {counts['bad']}, jobs queued {counts['queued']}")
    return code


def _ingest(stream: IO[str], counts: dict[str, int], *, strict: bool) -> int:
    from worker.errors import InvalidInput
    from worker.ingest import add_message, after_reply

    for number, line in enumerate(stream, start=1):
        counts["line"] = number
        if not line.strip():
            continue
        try:
            session_id, role, content, pinned = parse_line(line)
            add_message(session_id, role, content, pinned=pinned)
        except InvalidInput as exc:
            counts["bad"] += 1
            _err(f"line {number}: {exc}")
            if strict:
                _err(f"stopped at line {number} (--strict)")
                return 1
            continue
        counts["added"] += 1
        if role == "assistant" and after_reply(session_id):
            counts["queued"] += 1
    return 0


# -- context ------------------------------------------------------------------

def cmd_context(args: argparse.Namespace) -> int:
    from worker.errors import InvalidInput

    system_prompt = ""
    if args.system:
        try:
            system_prompt = Path(args.system).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read the system prompt {args.system}: {exc}") from None
    from worker.context import render_json

    print(render_json(args.session_id, system_prompt))
    return 0


# -- stats, failures ----------------------------------------------------------

STATS_LABELS = {
    "sessions": "sessions",
    "active_messages": "active messages",
    "active_tokens": "active tokens (est.)",
    "summary_tokens": "summary tokens (est.)",
    "summaries_applied": "summaries applied",
    "messages_condensed": "messages condensed",
    "tokens_saved": "context tokens saved (est.)",
    "failed_runs": "failed runs",
    "dead_runs": "dead runs",
    "latency_p50_ms": "summarize latency p50 (ms)",
    "latency_p95_ms": "summarize latency p95 (ms)",
    "api_input_tokens": "API input tokens",
    "api_output_tokens": "API output tokens",
    "sessions_needing_escalation": "sessions needing escalation",
    "sessions_leased": "sessions with a live lease",
    "sessions_pending": "sessions with a job pending",
    "sessions_blocked": "sessions dead-lettered (cooling down)",
}


def format_stats(data: dict[str, Any]) -> str:
    """The human form of ``recap stats``."""
    width = max(map(len, STATS_LABELS.values()))
    lines = []
    for key, label in STATS_LABELS.items():
        value = data[key]
        if value is None:
            value = "n/a"
        lines.append(f"{label:<{width}}  {value}")
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(data["runs_by_status"].items()))
    lines.append(f"{'runs by status':<{width}}  {statuses or 'none'}")
    return "\n".join(lines)


def cmd_stats(args: argparse.Namespace) -> int:
    from worker import ops
    from worker.db import transaction
    from worker.service import utcnow
    from worker.settings import get_settings

    settings = get_settings()
    with transaction() as s:
        data = asdict(ops.collect_stats(session=s, settings=settings, now=utcnow()))
    if args.json:
        _emit_json(data)
    else:
        print(format_stats(data))
    return 0


def _redactor() -> Callable[[str | None], str | None]:
    # Errors are redacted when recorded; this guards rows written by older code.
    from worker.settings import get_settings

    key = get_settings().anthropic_api_key
    secret = key.get_secret_value() if key else None

    def redact(text: str | None) -> str | None:
        return text.replace(secret, "[redacted]") if text and secret else text

    return redact


def cmd_failures(args: argparse.Namespace) -> int:
    from worker import ops
    from worker.db import transaction

    redact = _redactor()
    with transaction() as s:
        rows = ops.failures(session=s, limit=args.limit)
    items = [{**asdict(r), "error": redact(r.error), "reason": redact(r.reason)} for r in rows]
    if args.json:
        _emit_json(items)
        return 0
    if not items:
        print("no failed or dead runs")
    for item in items:
        when = item["created_at"].isoformat(timespec="seconds") if item["created_at"] else "?"
        print(f"{when}  {item['status']:<6}  session={item['session_id']}  "
              f"task={item['task_id'] or '-'}  attempt={item['attempt']}\n"
              f"    {item['error'] or item['reason'] or '(no error recorded)'}")
    return 0


# -- retry, summarize, sweep ----------------------------------------------------

def _report_queued(results: Sequence[Any]) -> int:
    code = 0
    for r in results:
        if r.status == "queued":
            print(f"{r.session_id}: queued summarize job {r.task_id or '(id unknown)'}")
        elif r.status == "already pending":
            print(f"{r.session_id}: a summarize job is already pending")
        else:
            _err(f"error: {r.session_id}: could not publish the job (broker unreachable?); "
                 "the sweeper will retry")
            code = 1
    return code


def cmd_retry(args: argparse.Namespace) -> int:
    from worker import ops
    from worker.db import transaction
    from worker.ingest import check_session_id
    from worker.service import utcnow
    from worker.settings import get_settings

    settings = get_settings()
    if args.all_dead:
        with transaction() as s:
            ids = ops.dead_session_ids(session=s)
        if not ids:
            print("no dead sessions")
            return 0
    else:
        ids = [check_session_id(args.session_id)]
    return _report_queued(ops.queue_jobs(ids, settings=settings, now=utcnow(), unblock=True))


def cmd_summarize(args: argparse.Namespace) -> int:
    from worker import ops
    from worker.ingest import check_session_id
    from worker.service import utcnow
    from worker.settings import get_settings

    settings = get_settings()
    session_id = check_session_id(args.session_id)
    if not args.now:
        return _report_queued(ops.queue_jobs([session_id], settings=settings, now=utcnow()))
    return _summarize_now(session_id, settings)


def _summarize_now(session_id: str, settings: Any) -> int:
    from worker import ops, service
    from worker.db import transaction
    from worker.errors import SessionNotFound
    from worker.runtime import get_summarizer

    with transaction() as s:
        if ops.missing_sessions([session_id], session=s):
            raise SessionNotFound(f"no chat session with id {session_id!r}")
    get_summarizer()  # a ConfigError (e.g. offline in production) before any claim
    # Not the final attempt: a transient error is recorded as 'failed' (not
    # dead-lettered for a cool-down) and handed to a queued job to retry.
    job = service.Job(task_id=f"cli-{uuid.uuid4()}", final_attempt=False)
    try:
        outcome = service.summarize(session_id, job=job, settings=settings)
    except Exception as exc:
        if service.is_transient(exc):
            # record_failure left the pending marker set for this retry.
            queued = ops.publish(session_id)
            _err(f"a retry job was {'queued' if queued.status == 'queued' else 'not sent'}")
        raise
    _emit_json(outcome.as_dict())
    if outcome.more_work:
        # apply_summary set the pending marker for exactly this follow-up.
        _report_queued([ops.publish(session_id)])
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from worker.settings import get_settings
    from worker.sweeper import sweep

    settings = get_settings()
    if not args.all:
        print(f"queued {sweep(settings)} sessions")
        return 0
    return _sweep_all(settings, batch=args.batch or settings.sweep_batch)


def _sweep_all(settings: Any, *, batch: int) -> int:
    from worker import ops
    from worker.service import utcnow

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
        _err(f"interrupted after {progress.queued} sessions queued "
             f"(up to session id {progress.last_id!r}); rerun to continue")
        return 130
    except ops.BrokerUnavailable as exc:
        _finish_line(live)
        _err(f"error: {exc}; stopped after {progress.queued} sessions queued")
        return 1
    _finish_line(live)
    print(f"queued {progress.queued} sessions in {progress.batches} batches")
    return 0


def _finish_line(live: bool) -> None:
    if live:
        print(file=sys.stderr)


def cmd_memories(args: argparse.Namespace) -> int:
    from worker.sessions import memories

    facts = memories(args.session_id)
    if args.json:
        _emit_json(facts)
    elif not facts:
        print(f"{args.session_id}: no memories yet")
    for m in facts if not args.json else []:
        print(f"[{m['importance']}] {m['category']:<10} {m['fact']}")
    return 0


def cmd_resummarize(args: argparse.Namespace) -> int:
    from worker.archive import resummarize
    from worker.settings import get_settings

    _emit_json(resummarize(args.session_id, settings=get_settings()).as_dict())
    return 0


def cmd_configure(args: argparse.Namespace) -> int:
    from worker.errors import InvalidInput
    from worker.sessions import configure_session

    overrides: dict[str, Any] = {}
    for pair in args.settings:
        key, sep, value = pair.partition("=")
        if not sep:
            raise InvalidInput(f"expected KEY=VALUE, got {pair!r}")
        overrides[key.strip()] = value.strip()
    stored = configure_session(args.session_id, None if args.clear else overrides)
    _emit_json({"session_id": args.session_id, "overrides": stored})
    return 0


# -- placeholders wired to other modules ------------------------------------------

def cmd_demo(args: argparse.Namespace) -> int:
    import importlib

    result = importlib.import_module("worker.demo").main(args)
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


# -- parser and main -----------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Operate Recap: rolling summaries of long chat sessions.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int],
            help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(func=func)
        return p

    p = add("ingest", cmd_ingest, "Add messages from JSON lines "
            '({"session_id", "role", "content", "pinned"}), in order.')
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="JSON-lines file; '-' or nothing reads stdin")
    p.add_argument("--strict", action="store_true", help="stop with exit 1 at the first bad line")

    p = add("context", cmd_context, "Print the assembled context of a session as JSON.")
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--system", metavar="FILE", help="file holding the system prompt")

    p = add("stats", cmd_stats, "Show sessions, summaries, failures, latency and API usage.")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = add("failures", cmd_failures, "List failed and dead runs with their errors, newest first.")
    p.add_argument("--limit", type=_positive, default=20, metavar="N", help="default 20")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = add("retry", cmd_retry, "Clear a session's dead-letter state and queue a summarize job.")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("session_id", nargs="?", metavar="SESSION_ID")
    target.add_argument("--all-dead", action="store_true",
                        help="every session whose most recent run is dead")

    p = add("summarize", cmd_summarize, "Queue a summarize job for a session, or run it now.")
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--now", action="store_true",
                   help="run the job in this process and print its outcome as JSON")

    p = add("sweep", cmd_sweep, "Queue sessions that need a summary and have no job.")
    p.add_argument("--all", action="store_true",
                   help="backfill every due session, in batches, until none is left")
    p.add_argument("--batch", type=_positive, metavar="N",
                   help="sessions per batch with --all (default RECAP_SWEEP_BATCH)")

    p = add("memories", cmd_memories, "Print the durable facts mined from a session.")
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = add("resummarize", cmd_resummarize,
            "Rebuild a session's summary from its archive (RECAP_ARCHIVE_SUMMARIZED=true).")
    p.add_argument("session_id", metavar="SESSION_ID")

    p = add("configure", cmd_configure,
            "Override settings for one session (e.g. trigger_messages=50 prompt=es).")
    p.add_argument("session_id", metavar="SESSION_ID")
    p.add_argument("settings", nargs="*", metavar="KEY=VALUE")
    p.add_argument("--clear", action="store_true", help="remove every override")

    p = add("demo", cmd_demo, "Run a self-contained demo on a local SQLite database.")
    p.add_argument("--messages", type=_positive, default=None, metavar="N",
                   help="messages to generate")
    p.add_argument("--db", metavar="PATH", help="SQLite database file to use")

    p = add("bench", cmd_bench, "Run the benchmarks (python -m bench); arguments pass through.")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, metavar="ARGS")
    return parser


def _db_unavailable(exc: BaseException) -> bool:
    from sqlalchemy.exc import InterfaceError, OperationalError

    return isinstance(exc, OperationalError | InterfaceError)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (argparse's 2 for usage errors)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else 0
    from worker.errors import RecapError

    try:
        return int(args.func(args))
    except RecapError as exc:
        _err(f"error: {exc}")
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except Exception as exc:
        if not _db_unavailable(exc):
            raise
        # Down, unreachable or not migrated: one line, not a traceback.
        first = str(exc).splitlines()[0]
        hint = " (is it migrated? alembic upgrade head)" if "no such table" in first else ""
        _err(f"error: database: {first}{hint}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
