"""What `recap demo` prints: a header (once: which summarizer), live progress, then
before/after, the summary, what was condensed and the context of the next call."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

SYSTEM_PROMPT = "You are the Larkspur Analytics SRE assistant."
# The header's first line without an API key: said once, at the top of stdout.
OFFLINE_BANNER = ("OFFLINE SUMMARIZER: the summaries below come from an extractive stand-in, "
                  "not from Claude")
RULE = "=" * 78


class Out:
    """Report lines on stdout, live progress on stderr."""

    def __init__(self, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        self.out, self.err = out, err

    def line(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def progress(self, text: str) -> None:
        print(text, file=self.err, flush=True)


class LogToOut(logging.Handler):
    """Recap's warnings as progress lines; the offline summarizer's own warning is
    left out (the header says it once)."""

    def __init__(self, out: Out, *, skip: Sequence[str] = ()) -> None:
        super().__init__(logging.WARNING)
        self.out, self.skip = out, tuple(skip)

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if not any(marker in message for marker in self.skip):
            self.out.progress(f"{record.levelname.lower()}: {message}")


def route_logs(out: Out, *, skip: Sequence[str] = ()) -> None:
    """Send the ``recap.*`` loggers' warnings through ``out`` (this process is the demo's)."""
    logger = logging.getLogger("recap")
    logger.addHandler(LogToOut(out, skip=skip))
    logger.propagate = False


def header(out: Out, *, offline: bool, model: str) -> None:
    """Which summarizer wrote the summaries: said once, before anything else."""
    out.line(RULE)
    if offline:
        out.line(OFFLINE_BANNER)
        out.line(f"({model}: it copies the first sentence of each message). Everything else "
                 "is Recap's real")
        out.line("pipeline. Set ANTHROPIC_API_KEY to have Claude write the summaries.")
    else:
        out.line(f"summarizer: {model} (Claude): the summaries below are Claude's.")
    out.line(RULE)


def session_state(session_id: str) -> tuple[bool, list[Any]]:
    """(idle: no job queued or running, the session's summary_runs rows)."""
    from sqlalchemy import select

    from recap.db import transaction
    from recap.models import ChatSession, SummaryRun

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


def clip(text: str, *, lines: int, width: int) -> list[str]:
    """At most ``lines`` lines of ``text``, each cut to ``width``, then how many were left."""
    rows = text.splitlines()
    shown = [r[:width] + ("..." if len(r) > width else "") for r in rows[:lines]]
    if len(rows) > lines:
        shown.append(f"... ({len(rows) - lines} more lines)")
    return shown


@dataclass(frozen=True)
class Comparison:
    """The next call's context without Recap (every message) and with it."""

    messages_fed: int
    tokens_without: int
    messages_kept: int
    tokens_with: int
    budget: int
    summary_tokens: int
    condensed: int


def compare(messages: Sequence[tuple[str, str]], ctx: Any, row: Any) -> Comparison:
    """Both contexts counted the same way: :func:`recap.core.context.assemble.assemble` over
    every fed message (no summary) against the context Recap assembled."""
    from recap.core.context.assemble import Row, assemble
    from recap.llm.tokens import count_tokens

    every = [Row(role, content, count_tokens(content)) for role, content in messages]
    without = assemble(SYSTEM_PROMPT, every, summary=None, summary_tokens=0,
                       budget=ctx["budget"], count=count_tokens)
    return Comparison(len(messages), without["tokens"], row.message_count, ctx["tokens"],
                      ctx["budget"], row.summary_tokens, row.summarized_message_count)


def turn_count(messages: Sequence[dict[str, Any]]) -> str:
    """How many turns the context sends, and how many of them are the session's own
    messages (the table's count) next to the placeholder user turn Recap opens a
    window with when it starts with the assistant."""
    from recap.core.context.assemble import (
        PLACEHOLDER_START,
        PLACEHOLDER_SUMMARIZED,
        PLACEHOLDER_WITHHELD,
    )

    placeholders = {PLACEHOLDER_START, PLACEHOLDER_SUMMARIZED, PLACEHOLDER_WITHHELD}
    added = sum(1 for m in messages if m["role"] == "user" and m["content"] in placeholders)
    if not added:
        return f"{len(messages)} turns"
    return (f"{len(messages)} turns: the {len(messages) - added} active messages, opened by "
            "a placeholder user turn (the Messages API starts with the user)")


def print_comparison(c: Comparison, out: Out) -> None:
    def pct(tokens: int) -> str:
        return f"{tokens:,} ({tokens / c.budget:.0%})"

    saved = c.tokens_without - c.tokens_with
    rows = [("", "without Recap", "with Recap"),
            ("messages in the context", str(c.messages_fed),
             f"{c.messages_kept} + a summary of {c.condensed}" if c.condensed
             else str(c.messages_kept)),
            (f"tokens (of the {c.budget:,} budget)", pct(c.tokens_without), pct(c.tokens_with)),
            ("summary", "-", f"{c.summary_tokens:,} tokens" if c.condensed else "none yet")]
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    out.line("== before / after: the context of the next Claude call ==")
    for label, before, after in rows:
        out.line(f"  {label:<{widths[0]}}  {before:<{widths[1]}}  {after}")
    if c.condensed:
        out.line(f"  Recap saves {saved:,} tokens on every call from now on, and keeps the "
                 "context under the budget as the chat grows.")
    else:
        out.line("  The conversation stayed below the thresholds: nothing to condense yet.")


def print_report(session_id: str, out: Out, excerpts: dict[int, str],
                 messages: Sequence[tuple[str, str]]) -> bool:
    """Before/after, the summary, the runs and the assembled context; True if a
    summary was applied."""
    from recap.api.context import build_context
    from recap.core.context.assemble import SUMMARY_OPEN, content_text, system_text
    from recap.db import transaction
    from recap.models import ChatSession

    with transaction() as db:
        row = db.get(ChatSession, session_id)
    assert row is not None, "the demo session was created by add_message"
    _, runs = session_state(session_id)
    applied = [r for r in runs if r.status == "applied"]
    ctx = build_context(session_id, system_prompt=SYSTEM_PROMPT)
    out.line()
    out.line(f"session {session_id}: title {row.title!r}" if row.title
             else f"session {session_id}: no title yet")
    out.line()
    print_comparison(compare(messages, ctx, row), out)

    out.line()
    out.line(f"== rolling summary: version {row.summary_version}, {row.summary_tokens} tokens, "
             f"{row.summarized_message_count} messages condensed ==")
    for text in clip(row.rolling_summary or "(none yet: the conversation stayed below the "
                     "thresholds)", lines=12, width=110):
        out.line(text)

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

    out.line()
    out.line(f"== context for the next Claude call: {ctx['tokens']} tokens of the "
             f"{ctx['budget']}-token budget (summary + {row.message_count} active messages) ==")
    out.line("system (the app's prompt, memories, then the summary):")
    system = system_text(ctx["system"])
    at = system.find(SUMMARY_OPEN)
    parts = [system] if at < 0 else [system[:at].rstrip("\n"), system[at:]]
    for part in (p for p in parts if p):
        for text in clip(part, lines=6, width=110):
            out.line("  " + text)
    turns = [f"  {m['role']:>9}: {first_line(content_text(m['content']), 90)}"
             for m in ctx["messages"]]
    out.line(f"messages: {turn_count(ctx['messages'])}; the first and last, one line each:")
    for text in turns if len(turns) <= 6 else [*turns[:3], "  ...", *turns[-3:]]:
        out.line(text)
    return bool(applied)
