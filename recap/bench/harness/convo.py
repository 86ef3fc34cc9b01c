"""One long conversation through the real Recap pipeline, shared by the tokens,
context, memory and cost benchmarks (run once per ``recap bench`` invocation).

A real ``celery worker`` process (threads, concurrency 4) consumes the jobs; the
driver adds each message, calls the hook after each reply and, when a job was
queued, waits for it (and its follow-ups) before the next message: a human
chat is slower than one summarization. Before each model call (after each user
message) it records ``build_context(...)["tokens"]``; a thread samples the
worker's RSS with psutil when it is installed (the bench extra; the memory
benchmark needs it, the others do not).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from recap.bench.harness import env as benv

SESSION = "convo-1"


@dataclass
class ConvoRun:
    messages: int
    context: list[int] = field(default_factory=list)  # tokens per model call
    trips: list[int] = field(default_factory=list)  # message index when each job applied
    requests: list[dict[str, Any]] = field(default_factory=list)
    # each answered request with the stand-in's answer (FakeAnthropic.answers)
    answers: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    # as_request(build_context(...)) with prompt caching, per model call
    bodies: list[dict[str, Any]] = field(default_factory=list)
    token_of: dict[int, int] = field(default_factory=dict)  # message id -> tokens
    runs: list[tuple[int, int]] = field(default_factory=list)  # (first id, last id)
    rss_start: int = 0
    rss_peak: int = 0
    seconds: float = 0.0


_CACHE: dict[tuple[int, tuple[tuple[str, object], ...]], ConvoRun] = {}


def _rss_sampler(psutil: Any, pid: int, run: ConvoRun, stop: threading.Event) -> None:
    proc = psutil.Process(pid)
    while not stop.is_set():
        try:
            rss = proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children())
        except psutil.Error:
            return
        run.rss_peak = max(run.rss_peak, rss)
        stop.wait(0.05)


def _start_sampler(pid: int, run: ConvoRun, stop: threading.Event) -> threading.Thread | None:
    """Sample the worker's RSS until ``stop`` (None without psutil: no memory figures)."""
    try:
        import psutil
    except ImportError:
        return None
    run.rss_start = psutil.Process(pid).memory_info().rss
    sampler = threading.Thread(target=_rss_sampler, args=(psutil, pid, run, stop), daemon=True)
    sampler.start()
    return sampler


def conversation_run(n: int, script: str = "demo", **settings: object) -> ConvoRun:
    """Feed ``n`` messages of ``script`` ("demo": the demo's conversation; "short":
    recap.bench.harness.seed.short_script) through Recap once; cached per ``n``, script and
    ``settings`` (``RECAP_*`` variables for this run, e.g. ``RECAP_BATCH_SIZE=40``)."""
    key = (n, (("script", script), *sorted(settings.items())))
    if key in _CACHE:
        return _CACHE[key]
    from sqlalchemy import select

    from recap.api.context import as_request, build_context
    from recap.api.ingest import add_message, after_reply
    from recap.bench.harness.seed import demo_script, short_script
    from recap.bench.harness.workers import count_runs, first_errors, subprocess_worker, wait_idle
    from recap.db import transaction
    from recap.llm.tokens import count_tokens
    from recap.models import SummaryRun

    env = benv.setup()
    benv.reset_state(*settings)
    benv.configure(**settings)
    run = ConvoRun(messages=n)
    started = time.monotonic()
    with subprocess_worker(4) as proc:
        stop = threading.Event()
        sampler = _start_sampler(proc.pid, run, stop)
        applied = 0
        messages = demo_script(n) if script == "demo" else short_script(n)
        for i, (role, content) in enumerate(messages):
            run.token_of[add_message(SESSION, role, content)] = count_tokens(content)
            if role == "user":
                ctx = build_context(SESSION, system_prompt=benv.SYSTEM_PROMPT,
                                    prompt_caching=True)
                run.context.append(ctx["tokens"])
                run.bodies.append(as_request(ctx))
            elif after_reply(SESSION):
                wait_idle(SESSION)
                now = count_runs("applied")
                run.trips.extend([i] * (now - applied))
                applied = now
        stop.set()
        if sampler is not None:
            sampler.join()
    run.seconds = time.monotonic() - started
    run.requests = list(env.fake.requests)
    run.answers = list(env.fake.answers)
    with transaction() as s:
        run.runs = [(a, b) for a, b in s.execute(
            select(SummaryRun.first_message_id, SummaryRun.last_message_id)
            .where(SummaryRun.status == "applied").order_by(SummaryRun.id))
            if a is not None and b is not None]
    if not run.runs:
        raise RuntimeError(f"no summary was applied in the conversation run: {first_errors()}")
    _CACHE[key] = run
    return run


def demo_runs(n: int) -> tuple[Any, ConvoRun, list[tuple[str, str]]]:
    """(the bench environment, Recap's run over ``n`` demo messages, the messages)."""
    from recap.bench.harness.seed import demo_script

    env = benv.setup()
    return env, conversation_run(n), demo_script(n)
