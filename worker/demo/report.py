"""What `recap demo` prints: live progress, the worker's runs, the summary and the context."""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

OFFLINE_LABEL = "[offline summarizer: not Claude] "
SYSTEM_PROMPT = "You are the Larkspur Analytics SRE assistant."


class Out:
    """Report lines on stdout, live progress on stderr, each labelled when offline."""

    def __init__(self, label: str, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        self.label, self.out, self.err = label, out, err

    def line(self, text: str = "") -> None:
        for part in text.splitlines() or [""]:
            print(self.label + part, file=self.out, flush=True)

    def progress(self, text: str) -> None:
        print(self.label + text, file=self.err, flush=True)


class LogToOut(logging.Handler):
    """Recap's warnings (the offline summarizer's, say) as labelled progress lines."""

    def __init__(self, out: Out) -> None:
        super().__init__(logging.WARNING)
        self.out = out

    def emit(self, record: logging.LogRecord) -> None:
        self.out.progress(f"{record.levelname.lower()}: {record.getMessage()}")


def route_logs(out: Out) -> None:
    """Send the ``recap.*`` loggers' warnings through ``out`` (this process is the demo's)."""
    logger = logging.getLogger("recap")
    logger.addHandler(LogToOut(out))
    logger.propagate = False


def session_state(session_id: str) -> tuple[bool, list[Any]]:
    """(idle: no job queued or running, the session's summary_runs rows)."""
    from sqlalchemy import select

    from models import ChatSession, SummaryRun
    from worker.db import transaction

    with transaction() as db:
        row = db.get(ChatSession, session_id)
        runs = list(db.scalars(select(SummaryRun).where(SummaryRun.session_id == session_id)
                               .order_by(SummaryRun.id)))
    return row is None or (row.enqueued_at is None and row.lease_token is None), runs


def describe_run(run: Any) -> str:
    if run.status != "applied":
        return f"run {run.id}: {run.status}: {run.reason}" + (f" ({run.error})" if run.error
                                                              else "")
    return (f"run {run.id}: applied: condensed {run.messages_condensed} messages (ids "
            f"{run.first_message_id}-{run.last_message_id}) into a {run.summary_tokens}-token "
            f"summary with {run.model} in {run.latency_ms} ms; {run.reason}")


def first_line(text: str, width: int) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first[:width] + ("..." if len(first) > width else "")


def print_report(session_id: str, out: Out, excerpts: dict[int, str]) -> bool:
    """The summary, the runs and the assembled context; True if a summary was applied."""
    from models import ChatSession
    from worker.api.context import build_context
    from worker.db import transaction

    with transaction() as db:
        row = db.get(ChatSession, session_id)
    assert row is not None, "the demo session was created by add_message"
    _, runs = session_state(session_id)
    applied = [r for r in runs if r.status == "applied"]
    out.line()
    out.line(f"== rolling summary: version {row.summary_version}, {row.summary_tokens} tokens, "
             f"{row.summarized_message_count} messages condensed ==")
    out.line(row.rolling_summary or "(none yet: the conversation stayed below the thresholds)")
    out.line()
    out.line(f"== what was condensed: {len(applied)} of {len(runs)} summary_runs applied ==")
    for run in runs:
        if run.status == "skipped":
            continue
        out.line(describe_run(run))
        if run.status == "applied":
            ids = [i for i in excerpts if run.first_message_id <= i <= run.last_message_id]
            shown = [f"    {i}  {excerpts[i]}" for i in ids]
            for text in (shown[:2] + ["    ..."] + shown[-2:]) if len(ids) > 4 else shown:
                out.line(text)
    skipped = [r for r in runs if r.status == "skipped"]
    if skipped:
        out.line(f"{len(skipped)} runs skipped: the hook's counter check queued a job and the "
                 f"plan declined it (last: {skipped[-1].reason})")
    ctx = build_context(session_id, system_prompt=SYSTEM_PROMPT)
    out.line()
    out.line(f"== context for the next Claude call: {ctx['tokens']} tokens of the "
             f"{ctx['budget']}-token budget (summary + {row.message_count} active messages) ==")
    out.line("system: " + ctx["system"])
    out.line(f"messages: {len(ctx['messages'])} turns, the first line of each:")
    for m in ctx["messages"]:
        out.line(f"  {m['role']:>9}: {first_line(m['content'], 90)}")
    return bool(applied)
