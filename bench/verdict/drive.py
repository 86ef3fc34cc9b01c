"""Every system over a workload, in this process, with the requests each sends.

Recap runs its real pipeline on the bench's PostgreSQL database: ``add_message``,
then before each model call (after each user message) ``as_request(build_context(...))``,
and after each assistant message ``after_reply``, which publishes as in production.
When it sent a summarize job, the task a worker would run
(``recap.tasks.summarize_session``) is applied right here with Celery's
``Task.apply`` (the same task code, run eagerly), again while the job left a
follow-up queued: a fold lands where a worker would put it in a chat slower than
one summarization, without a worker process (what makes the quick verdict fast).
Its summaries come from the stand-in over its real HTTP protocol.

The peers (recap.evals.peers), full history, full history with tool-result
clearing (bench.verdict.clearing) and with server-side compaction
(bench.verdict.compaction, its summaries from the stand-in over HTTP) see one
session at a time, as their defaults do. The planted-fact questions
(recap.evals.run.quiz) are answered by the stand-in's reader
(recap.evals.standin.reader_answer) from the request each system would send
next, the question as its newest user turn.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.verdict.clearing import ClearToolUses
from bench.verdict.compaction import Compact, OnDemand, Summarize
from bench.verdict.shapes import Workload, scripts
from recap.bench.harness import env as benv
from recap.bench.harness.pricing import Spent

SETTLE_MAX = 50  # follow-up jobs per reply at most: a loop means a bug, not a long fold
SUMMARY_DEADLINE_S = 120.0  # one compaction summary from the stand-in, at most


@dataclass
class SystemRun:
    """What one system sent over a workload."""

    name: str
    bodies: list[dict[str, Any]] = field(default_factory=list)  # one per model call
    starts: list[bool] = field(default_factory=list)  # the call opens a session
    # Its summarizing calls' input and output tokens (Recap: summary, repair, title;
    # a peer's summaries; server-side compaction's iterations, at the reply model's rates).
    spent: Spent = field(default_factory=Spent)
    qa: tuple[int, int] = (0, 0)  # (correct, asked)
    folds: int = 0
    seconds: float = 0.0
    error: str | None = None
    key: str = ""  # the same system on every workload, when its name varies (summary table)
    acts: bool = True  # False: a compaction peer whose trigger never fired here


def answer(body: dict[str, Any], question: str) -> str:
    """The stand-in reader's answer to ``question`` (a quiz line) from ``body`` plus
    the question as the newest user turn."""
    from recap.evals.run import QA_PREFIX
    from recap.evals.standin import reader_answer

    asked = dict(body, messages=[*body["messages"], {"role": "user", "content": question}])
    return reader_answer(asked, question.split(QA_PREFIX, 1)[-1])


def settle(session_id: str) -> int:
    """Run the queued summarize job (and its follow-ups) here; how many ran."""
    from recap.bench.harness.workers import session_idle
    from recap.worker.tasks import summarize_session

    for ran in range(SETTLE_MAX):
        if session_idle(session_id):
            return ran
        summarize_session.apply(args=(session_id,))
    raise RuntimeError(f"session {session_id} still has work after {SETTLE_MAX} jobs")


def run_recap(w: Workload, name: str, **settings: object) -> SystemRun:
    """Recap over ``w`` with ``settings`` (``RECAP_*`` variables of this run)."""
    from recap.api.context import as_request, build_context
    from recap.api.ingest import add_message, after_reply
    from recap.evals.run import quiz
    from recap.sessions.rewind import rewind

    env = benv.setup()
    benv.reset_state(*settings)
    benv.configure(**settings)
    run = SystemRun(name)
    started = time.monotonic()
    sid, last = "", 0
    for sid, messages in w.sessions:
        first = True
        for role, content in messages:
            last = add_message(sid, role, content, user_id=w.user_id)
            if role == "user":
                run.bodies.append(as_request(build_context(
                    sid, system_prompt=benv.SYSTEM_PROMPT, prompt_caching=True)))
                run.starts.append(first)
                first = False
            elif after_reply(sid):
                run.folds += settle(sid)

    def ask(question: str) -> str:
        # As a chat app asks: the question stored as the newest user turn (the
        # memories shown are those relevant to it), then rewound away.
        add_message(sid, "user", question)
        try:
            body = as_request(build_context(sid, system_prompt=benv.SYSTEM_PROMPT))
        finally:
            rewind(sid, last)
        return answer(body, question)

    run.qa = quiz(w.facts, ask)
    from recap.bench.harness.pricing import recap_spent

    run.spent = recap_spent(env.fake.answers, counter())
    run.seconds = time.monotonic() - started
    return run


def run_peer(w: Workload, peer: Callable[..., Any]) -> SystemRun:
    """A peer (recap.evals.peers) over each session of ``w`` in turn."""
    from recap.bench.harness.pricing import peer_body, spent_of
    from recap.evals.run import quiz

    env = benv.setup()
    run = SystemRun("")
    started = time.monotonic()
    latency, env.fake.delay = env.fake.delay, 0.0
    try:
        for script in scripts(w):
            env.fake.reset()
            result = peer(script, env.fake.url)
            run.name, run.error = result.name, result.error or run.error
            run.folds += result.calls
            bodies = [peer_body(m) for m in result.sent]
            run.bodies += bodies
            run.starts += [i == 0 for i in range(len(bodies))]
            run.spent += spent_of(env.fake.answers, counter())  # its summaries, all
    finally:
        env.fake.delay = latency
    last = run.bodies[-1] if run.bodies else {"messages": []}
    run.qa = quiz(w.facts, lambda q: answer(last, q))
    run.seconds = time.monotonic() - started
    return run


def run_full(w: Workload, *, caching: bool = True) -> SystemRun:
    """Full history: every message of the session so far, the oldest dropped over
    the peers' budget; with or without caching."""
    from recap.bench.harness.pricing import full_history, without_breakpoints
    from recap.evals.peers import BUDGET
    from recap.evals.run import quiz

    run = SystemRun("full history, " + ("caching" if caching else "no caching"))
    for script in scripts(w):
        bodies = full_history(script, BUDGET, counter())
        run.bodies += bodies if caching else [without_breakpoints(b) for b in bodies]
        run.starts += [i == 0 for i in range(len(bodies))]
    last = run.bodies[-1] if run.bodies else {"messages": []}
    run.qa = quiz(w.facts, lambda q: answer(last, q))
    return run


def run_clearing(w: Workload, edit: ClearToolUses, name: str) -> SystemRun:
    """Full history with caching plus tool-result clearing (bench.verdict.clearing):
    each session's messages in block form, the edit applied per request."""
    from bench.verdict.clearing import clearing_history
    from recap.evals.peers import BUDGET
    from recap.evals.run import quiz

    run = SystemRun(name)
    for _, messages in w.sessions:
        bodies = clearing_history(messages, edit, BUDGET, counter())
        run.bodies += bodies
        run.starts += [i == 0 for i in range(len(bodies))]
    last = run.bodies[-1] if run.bodies else {"messages": []}
    run.qa = quiz(w.facts, lambda q: answer(last, q))
    return run


def stand_in_summarizer(base_url: str) -> Summarize:
    """Compaction summaries from the stand-in at ``base_url`` over the Messages API
    (in the verdict, its neutral rule: the digest every summariser gets)."""
    import anthropic

    from bench.verdict.compaction import prompt
    from recap.llm.deadline import call_within
    from recap.settings import DEFAULT_MODEL

    client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-bench", max_retries=0,
                                 timeout=60)

    def summarize(turns: Sequence[tuple[str, str]], instructions: str | None) -> str:
        body = prompt(turns, instructions)
        reply = call_within(lambda: client.messages.create(
            model=DEFAULT_MODEL, max_tokens=body["max_tokens"], messages=body["messages"]),
            SUMMARY_DEADLINE_S, what="compaction summary")
        return "".join(b.text for b in reply.content if b.type == "text")

    return summarize


def run_compaction(w: Workload, config: Compact | OnDemand, name: str, *,
                   key: str = "") -> SystemRun:
    """Full history with caching plus server-side compaction (bench.verdict.compaction):
    the threshold edit (``Compact``) or on-demand compaction (``OnDemand``) over each
    session in block form; priced and judged on the requests as the API read them,
    each compaction billed as its iteration (at the reply model's rates)."""
    from bench.verdict.compaction import compact_history, on_demand_history
    from recap.evals.run import quiz

    env = benv.setup()
    summarize = stand_in_summarizer(env.fake.url)
    run = SystemRun(name, key=key)
    started = time.monotonic()
    billed = Spent(at_reply_rates=True)
    latency, env.fake.delay = env.fake.delay, 0.0
    try:
        for _, messages in w.sessions:
            env.fake.reset()  # each session's summaries start afresh, as the peers' do
            done = (compact_history(messages, config, summarize=summarize, count=counter())
                    if isinstance(config, Compact) else
                    on_demand_history(messages, config, summarize=summarize, count=counter()))
            run.bodies += done.read
            run.starts += [i == 0 for i in range(len(done.read))]
            run.folds += len(done.iterations)
            billed += done.billed
    finally:
        env.fake.delay = latency
    run.spent = billed
    run.acts = run.folds > 0
    last = run.bodies[-1] if run.bodies else {"messages": []}
    run.qa = quiz(w.facts, lambda q: answer(last, q))
    run.seconds = time.monotonic() - started
    return run


_COUNT: list[Callable[[str], int]] = []


def counter() -> Callable[[str], int]:
    """Recap's token counter, memoized per text for the whole run (blocks repeat)."""
    if not _COUNT:
        import functools

        from recap.llm.tokens import count_tokens

        _COUNT.append(functools.lru_cache(maxsize=None)(count_tokens))
    return _COUNT[0]
