"""RecapMiddleware vs LangChain's SummarizationMiddleware, in one ``create_agent``.

``recap bench --only middleware [--quick]`` (the bench extra brings LangChain)

One agent transcript, run through ``langchain.agents.create_agent`` three ways
with the same scripted chat model (each user turn: a tool call, its result, then
the transcript's reply): no memory middleware (the baseline: the whole thread
every call), ``SummarizationMiddleware`` with its defaults (trigger set to
Recap's fold point, 25,600 tokens: it has no default trigger), and
``RecapMiddleware`` with Recap's defaults. The transcript is the demo's SRE
conversation with planted facts (``recap.evals.facts``), as ``recap eval``
uses it. Both summarizers talk to the same local stand-in of the Messages API
(``recap.evals.standin.EvalFake``, which mines the user's first-person
statements as memories, as a model would): figures measure the mechanisms (what is
resent, what survives, what waits), not a model.

Per system:
- cost: tokens of every agent model call's input (tiktoken over its text), and
  of the summarization calls (input + output, as the stand-in counts them);
- specifics kept: the share of the transcript's specifics (numbers, ids, paths,
  ``extract_specifics``) that the last model call's input still carries;
  planted facts: how many of the planted facts it carries, and how many the
  stand-in's reader answers from it (``reader_answer``, the ``recap eval --qa``
  reader);
- reply-path latency: the wall time of each ``agent.invoke``, median and p95,
  and the median added over the baseline. SummarizationMiddleware summarizes
  inside the turn that crosses its trigger (p95 shows those turns); Recap's
  turn stores the messages and queues a job (PostgreSQL and Redis, harness/env.py), and a
  worker folds afterwards: here the job runs after the timed turn, as a worker would. Each
  stand-in call waits the bench's latency (0.8 s), as a model call would.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from recap.bench.harness import env as benv
from recap.bench.harness.extras import peers
from recap.bench.harness.stats import percentile

SYSTEM = "You are an SRE assistant helping the user with their services."
FACTS = 12
TURN_MESSAGES = 240  # 120 user turns, about 98k tokens: several folds for both
QUICK_MESSAGES = 80
LC_TRIGGER = 25_600  # Recap folds at 80% of its 32,000-token budget
RUNS = 3


@dataclass
class Row:
    name: str
    agent_tokens: int = 0
    summary_tokens: int = 0
    summarizer_calls: int = 0
    on_reply_path: int = 0  # summarizer calls made inside a user's turn
    specifics: float = 0.0
    facts_kept: int = 0
    facts_answered: int = 0
    waits: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.waits) * 1000

    @property
    def p95_ms(self) -> float:
        return percentile(self.waits, 95) * 1000


def transcript(messages: int) -> tuple[list[tuple[str, str]], list[Any]]:
    from recap.demo.conversation import load
    from recap.evals.facts import plant, weave

    facts = plant(FACTS)
    return weave(load(messages), facts), facts


def _model(script: Sequence[tuple[str, str]]) -> Any:
    """The agent's chat model: per user turn a tool call, then the transcript's reply."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    replies = [c for r, c in script if r == "assistant"]

    class Scripted(GenericFakeChatModel):
        seen: list[list[BaseMessage]] = []
        turn: int = -1

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: list[BaseMessage], stop: Any = None,
                      run_manager: Any = None, **kwargs: Any) -> ChatResult:
            self.seen.append(list(messages))
            if isinstance(messages[-1], ToolMessage):
                text = replies[self.turn] if self.turn < len(replies) else "OK."
                message = AIMessage(content=text)
            else:
                self.turn += 1
                message = AIMessage(content="", tool_calls=[
                    {"name": "lookup", "args": {"turn": self.turn}, "id": f"call_{self.turn}"}])
            return ChatResult(generations=[ChatGeneration(message=message)])

    return Scripted(messages=iter(()), seen=[])


def _tool() -> Any:
    from langchain_core.tools import tool

    @tool
    def lookup(turn: int) -> str:
        """Look up the service's records for this turn."""
        return f"record {turn}: status ok"

    return lookup


def _text(messages: Sequence[Any]) -> str:
    return "\n".join(m.text for m in messages)


def _summarizer(url: str, row: Row) -> Any:
    from langchain_anthropic import ChatAnthropic
    from langchain_core.callbacks import BaseCallbackHandler

    from recap.settings import DEFAULT_MODEL

    class Usage(BaseCallbackHandler):
        def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            row.summarizer_calls += 1
            row.on_reply_path += 1
            for generations in response.generations:
                for g in generations:
                    usage = getattr(g.message, "usage_metadata", None) or {}
                    row.summary_tokens += usage.get("input_tokens", 0) + \
                        usage.get("output_tokens", 0)

    options: dict[str, Any] = {"model": DEFAULT_MODEL, "base_url": url, "api_key": "sk-ant-bench",
                               "max_retries": 0, "timeout": 60, "callbacks": [Usage()]}
    return ChatAnthropic(**options)


def run_system(name: str, script: Sequence[tuple[str, str]], facts: Sequence[Any],
               middleware: Callable[[Row], list[Any]],
               after_turn: Callable[[str, Row], None] = lambda sid, row: None) -> Row:
    from langchain.agents import create_agent
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.memory import InMemorySaver

    from recap.core.specifics import extract_specifics
    from recap.evals.facts import retained
    from recap.evals.run import QA_PREFIX, QA_SUFFIX, quiz
    from recap.evals.standin import reader_answer
    from recap.llm.tokens import count_tokens

    row = Row(name)
    model = _model(script)
    agent = create_agent(model, [_tool()], system_prompt=SYSTEM, middleware=middleware(row),
                         checkpointer=InMemorySaver())
    sid = f"bench-{name.split()[0].lower()}-{time.monotonic_ns()}"
    config: RunnableConfig = {"configurable": {"thread_id": sid}}
    for role, content in script:
        if role != "user":
            continue
        t0 = time.perf_counter()
        agent.invoke({"messages": [{"role": "user", "content": content}]}, config)
        row.waits.append(time.perf_counter() - t0)
        after_turn(sid, row)
    row.agent_tokens = sum(count_tokens(_text(call)) for call in model.seen)
    last = _text(model.seen[-1])
    wanted = extract_specifics("\n".join(c for _, c in script))
    row.specifics = len(wanted & extract_specifics(last)) / max(1, len(wanted))
    row.facts_kept = retained(facts, last)
    body = {"system": "", "messages": [{"role": "user", "content": last}]}
    row.facts_answered, _ = quiz(facts, lambda q: reader_answer(
        body, q.removeprefix(QA_PREFIX).removesuffix(QA_SUFFIX)))
    return row


def _recap_jobs(sid: str, row: Row) -> None:
    """What a worker does after the turn: run the queued fold (untimed)."""
    from recap.worker.jobs.outcome import Job
    from recap.worker.jobs.resources import get_resources
    from recap.worker.jobs.summarize import summarize

    res = get_resources()
    while True:
        outcome = summarize(sid, job=Job(task_id=f"bench-{len(row.waits)}"), res=res)
        if outcome.status != "applied":
            return
        row.summarizer_calls += 1
        row.summary_tokens += (outcome.input_tokens or 0) + (outcome.output_tokens or 0)
        if not outcome.more_work:
            return


def run_once(messages: int) -> list[Row]:
    """The three systems on one transcript, on the bench's PostgreSQL, Redis queue
    and stand-in (bench/env.py: each Claude call waits its latency)."""
    from recap.evals.standin import EvalFake

    env = benv.current() or benv.setup(benv.DEFAULT_LATENCY_S)
    script, facts = transcript(messages)
    rows = []
    # recap eval's stand-in (it mines the user's first-person statements as memories,
    # as a model would), with the bench's latency.
    fake = EvalFake().start()
    try:
        with _stand_in_url(fake.url):
            for name, middleware, after in _systems(fake.url):
                benv.reset_state()
                fake.delay = env.latency
                rows.append(run_system(name, script, facts, middleware,
                                       after or (lambda sid, row: None)))
    finally:
        fake.stop()
    return rows


@contextmanager
def _stand_in_url(url: str) -> Iterator[None]:
    """Point Recap at ``url`` for a block (not a configure()d variable: reset_state
    must not drop the bench's own stand-in URL)."""
    from recap.worker.jobs.resources import reset_process_state

    old = os.environ.get("ANTHROPIC_BASE_URL")
    os.environ["ANTHROPIC_BASE_URL"] = url
    reset_process_state()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("ANTHROPIC_BASE_URL", None)
        else:
            os.environ["ANTHROPIC_BASE_URL"] = old
        reset_process_state()


def _systems(url: str) -> list[tuple[str, Callable[[Row], list[Any]],
                                     Callable[[str, Row], None] | None]]:
    from langchain.agents.middleware import SummarizationMiddleware

    from recap.integrations.langchain_middleware import RecapMiddleware

    return [
        ("no memory middleware", lambda row: [], None),
        ("SummarizationMiddleware (defaults)",
         lambda row: [SummarizationMiddleware(_summarizer(url, row),
                                              trigger=("tokens", LC_TRIGGER))], None),
        ("RecapMiddleware (Recap defaults)", lambda row: [RecapMiddleware()], _recap_jobs)]


def run(quick: bool = False) -> str:
    """``recap bench --only middleware``: three runs, the table."""
    peers()  # LangChain's create_agent and middleware, ChatAnthropic
    messages = QUICK_MESSAGES if quick else TURN_MESSAGES
    runs = [run_once(messages) for _ in range(RUNS)]
    env = benv.current()
    latency = env.latency if env is not None else 0.0
    return (f"## RecapMiddleware vs SummarizationMiddleware in create_agent\n\n"
            f"{messages} transcript messages ({messages // 2} agent turns: a tool call, its "
            f"result, the reply), {FACTS} planted facts, median of {RUNS} runs in one sitting; "
            "local stand-in of the Messages API with "
            f"{latency:.1f} s per call (figures measure mechanisms, not a "
            "model).\n\n" + table(runs) + "\n")


def table(runs: Sequence[Sequence[Row]], facts: int = FACTS) -> str:
    """Median of the runs per system; the runs' latencies listed."""
    base = statistics.median(r[0].median_ms for r in runs)
    lines = ["| System | agent input tokens | summarizer tokens (calls, on the reply path) "
             "| specifics kept | planted facts kept / answered | reply-path ms: median "
             "(runs), p95 | added over no middleware |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for i, name in enumerate(r.name for r in runs[0]):
        rows = [run[i] for run in runs]
        med = statistics.median(r.median_ms for r in rows)
        listed = ", ".join(f"{r.median_ms:.1f}" for r in rows)
        one = rows[0]
        lines.append(
            f"| {name} | {statistics.median(r.agent_tokens for r in rows):,.0f} "
            f"| {statistics.median(r.summary_tokens for r in rows):,.0f} "
            f"({one.summarizer_calls}, {one.on_reply_path}) "
            f"| {statistics.median(r.specifics for r in rows):.0%} "
            f"| {one.facts_kept}/{facts} / {one.facts_answered}/{facts} "
            f"| {med:.1f} ({listed}), {statistics.median(r.p95_ms for r in rows):.0f} "
            f"| {med - base:+.1f} |")
    return "\n".join(lines)

