"""``recap`` commands that read: ingest (writes messages), context, stats, failures, memories."""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from worker.cli.base import emit_json, err

REQUIRED_FIELDS = ("session_id", "role", "content")
KNOWN_FIELDS = frozenset((*REQUIRED_FIELDS, "pinned"))


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
        err(f"interrupted at line {counts['line']}; lines before it were processed")
        code = 130
    print(f"added {counts['added']}, bad {counts['bad']}, jobs queued {counts['queued']}")
    return code


def _ingest(stream: IO[str], counts: dict[str, int], *, strict: bool) -> int:
    from worker.api.ingest import add_message, after_reply
    from worker.errors import InvalidInput

    for number, line in enumerate(stream, start=1):
        counts["line"] = number
        if not line.strip():
            continue
        try:
            session_id, role, content, pinned = parse_line(line)
            add_message(session_id, role, content, pinned=pinned)
        except InvalidInput as exc:
            counts["bad"] += 1
            err(f"line {number}: {exc}")
            if strict:
                err(f"stopped at line {number} (--strict)")
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
    from worker.api.context import render_json

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
    from worker.db import transaction, utcnow
    from worker.jobs import ops
    from worker.settings import get_settings

    settings = get_settings()
    with transaction() as s:
        data = asdict(ops.collect_stats(db=s, settings=settings, now=utcnow()))
    if args.json:
        emit_json(data)
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
    from worker.db import transaction
    from worker.jobs import ops

    redact = _redactor()
    with transaction() as s:
        rows = ops.failures(db=s, limit=args.limit)
    items = [{**asdict(r), "error": redact(r.error), "reason": redact(r.reason)} for r in rows]
    if args.json:
        emit_json(items)
        return 0
    if not items:
        print("no failed or dead runs")
    for item in items:
        when = item["created_at"].isoformat(timespec="seconds") if item["created_at"] else "?"
        print(f"{when}  {item['status']:<6}  session={item['session_id']}  "
              f"task={item['task_id'] or '-'}  attempt={item['attempt']}\n"
              f"    {item['error'] or item['reason'] or '(no error recorded)'}")
    return 0



def cmd_memories(args: argparse.Namespace) -> int:
    from worker.api.sessions import memories

    facts = memories(args.session_id)
    if args.json:
        emit_json(facts)
    elif not facts:
        print(f"{args.session_id}: no memories yet")
    for m in facts if not args.json else []:
        print(f"[{m['importance']}] {m['category']:<10} {m['fact']}")
    return 0


