"""The Prometheus collector of ``recap metrics`` and ``recap serve``'s ``/metrics``:
one database snapshot per scrape (recap.ops.metrics.snapshot), ``recap_up 0``
when the database cannot be read. prometheus_client loads on first use."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recap.ops.metrics import Snapshot

log = logging.getLogger("recap.metrics")


class RecapCollector:
    """A prometheus_client collector reading one snapshot per scrape. It keeps only
    a cache: the totals of settled summary_runs rows (recap.ops.metrics.RunLedger)."""

    def __init__(self) -> None:
        from recap.ops.metrics import RunLedger

        self.ledger = RunLedger()

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        from recap.db import first_line, transaction, utcnow
        from recap.ops.metrics import snapshot
        from recap.settings import get_settings

        started = time.perf_counter()
        snap = None
        try:
            with transaction() as db:
                snap = snapshot(db=db, settings=get_settings(), now=utcnow(),
                                ledger=self.ledger)
        except Exception as exc:
            from sqlalchemy.exc import DBAPIError

            detail = first_line(exc) if isinstance(exc, DBAPIError) else str(exc)
            log.warning("recap metrics: could not read the database: %s: %s",
                        type(exc).__name__, detail.splitlines()[0] if detail else "")
        yield GaugeMetricFamily("recap_up", "1 if this scrape read the database, else 0.",
                                value=0 if snap is None else 1)
        yield GaugeMetricFamily("recap_scrape_duration_seconds",
                                "Time this scrape spent reading the database.",
                                value=time.perf_counter() - started)
        if snap is not None:
            yield from families(snap)


def families(snap: Snapshot) -> Iterator[Any]:
    """The metric families of one snapshot."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    from recap.ops.metrics import SUMMARIZE_TASK, TITLE_TASK

    runs = CounterMetricFamily(
        "recap_runs", "Summarize job outcomes recorded in summary_runs, by status and "
        "reason class.", labels=["status", "reason"])
    for r in snap.runs:
        runs.add_metric([r.status, r.reason], r.runs)
    yield runs
    yield CounterMetricFamily("recap_messages_condensed",
                              "Messages condensed into summaries (applied runs).",
                              value=snap.messages_condensed)
    for i, (direction, value) in enumerate((("input", snap.input_tokens),
                                            ("output", snap.output_tokens))):
        tokens = CounterMetricFamily(
            f"recap_api_{direction}_tokens",
            f"Messages API {direction} tokens billed, by task. summarize_session: its "
            "summary and memory-mining calls; generate_title: the title calls.",
            labels=["task"])
        tokens.add_metric([SUMMARIZE_TASK], value)
        tokens.add_metric([TITLE_TASK], snap.title_tokens[i])
        yield tokens
    yield from spend_families(snap)
    gauges: tuple[tuple[str, str, float], ...] = (
        ("recap_sessions", "Chat sessions.", snap.sessions),
        ("recap_active_messages", "Messages in active windows (not yet condensed).",
         snap.active_messages),
        ("recap_active_tokens", "Tokens of the active messages (tiktoken estimate).",
         snap.active_tokens),
        ("recap_summary_tokens", "Tokens of the rolling summaries (tiktoken estimate).",
         snap.summary_tokens),
        ("recap_sessions_due", "Sessions that need a summary and have no job, lease or "
         "cool-down: what the next sweep queues.", snap.due),
        ("recap_sessions_pending", "Sessions with a summarize job queued and not started "
         "(or waiting for a retry).", snap.pending),
        ("recap_sessions_leased", "Sessions a job is working on (live lease).", snap.leased),
        ("recap_sessions_dead", "Sessions dead-lettered and cooling down (blocked_until in "
         "the future).", snap.dead),
        ("recap_sessions_over_budget", "Sessions whose summary plus active tokens exceed "
         "their context budget.", snap.over_budget),
        ("recap_sessions_escalated", "Sessions that need escalation: the newest messages, "
         "pinned ones and the summary alone exceed the budget.", snap.escalated),
        ("recap_oldest_due_session_age_seconds", "Seconds since the oldest due session "
         "last changed (0 if none is due).", snap.age_s(snap.oldest_due_at)),
        ("recap_oldest_pending_job_age_seconds", "Seconds the oldest pending summarize job "
         "has waited for a worker (0 if none).", snap.age_s(snap.oldest_pending_at)),
        ("recap_last_sweep_timestamp_seconds", "Unix time the last sweep completed (0: no "
         "sweep recorded).",
         0.0 if snap.last_sweep_at is None else snap.last_sweep_at.timestamp()),
    )
    for name, help_, figure in gauges:
        yield GaugeMetricFamily(name, help_, value=figure)


# The series of recap_spend_tokens_total: (path, kind) -> the Spend field.
SPEND_SERIES = (
    ("recap", "cache_read", "recap_cache_read_tokens"),
    ("recap", "cache_write", "recap_cache_write_tokens"),
    ("recap", "uncached", "recap_uncached_tokens"),
    ("recap", "summarize_input", "summarize_input_tokens"),
    ("recap", "summarize_output", "summarize_output_tokens"),
    ("full_history", "cache_read", "full_cache_read_tokens"),
    ("full_history", "cache_write", "full_cache_write_tokens"),
    ("full_history", "uncached", "full_uncached_tokens"),
)


def spend_families(snap: Snapshot) -> Iterator[Any]:
    """What the replies cost next to full history with caching (recap.core.spend),
    summed over the stored sessions."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    spent = snap.spend
    tokens = CounterMetricFamily(
        "recap_spend_tokens", "Input tokens of the replies' requests by path (recap: "
        "Recap's context plus its summarizing; full_history: every message with prompt "
        "caching) and kind (cache_read, cache_write, uncached, summarize_input, "
        "summarize_output). An estimate; sums over the stored sessions.",
        labels=["path", "kind"])
    for path, kind, name in SPEND_SERIES:
        tokens.add_metric([path, kind], getattr(spent, name))
    yield tokens
    yield CounterMetricFamily("recap_spend_replies", "Replies accounted in "
                              "recap_spend_tokens_total.", value=spent.replies)
    cost = GaugeMetricFamily(
        "recap_spend_cost_tokens", "Priced cost by path, in the reply model's base-input "
        "tokens, by the price table (RECAP_REPLY_MODEL's cache reads and writes, "
        "RECAP_MODEL's input and output; docs/operations/prices.md).", labels=["path"])
    cost.add_metric(["recap"], spent.recap_cost_tokens)
    cost.add_metric(["full_history"], spent.full_cost_tokens)
    yield cost
    yield GaugeMetricFamily("recap_spend_saved_tokens", "Full history's priced cost minus "
                            "Recap's, in the reply model's base-input tokens: negative is a "
                            "loss.", value=spent.saved_tokens)
    yield GaugeMetricFamily("recap_spend_saved_usd", "recap_spend_saved_tokens in USD, at "
                            "the reply model's input price.", value=spent.saved_usd)
    yield GaugeMetricFamily("recap_sessions_at_loss", "Sessions where Recap costs more than "
                            "full history with caching.", value=snap.sessions_at_loss)
