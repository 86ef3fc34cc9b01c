"""Run one conversation through a system and measure what survives each fold.

:func:`run_recap` drives Recap's real pipeline (``add_message`` -> the summarize
job -> ``build_context``) on a private SQLite database, synchronously: the job
function a Celery worker runs is called right after each assistant reply, until
it has nothing more to do, so a fold lands exactly where a worker would put it.
After every applied fold it reads ``build_context`` and counts the planted
specifics present in what the model would see (summary, memories, window).

:func:`run_peer` does the same for LangMem's ``summarize_messages`` and
LangChain's ``SummarizationMiddleware`` (recap.evals.peers), on their own
context after each of their summarization calls.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from recap import progress as steps
from recap.evals.facts import Message, Planted, retained
from recap.evals.probes import Probe, answerable, recent_window
from recap.evals.where import Audit, audit, where_kept

if TYPE_CHECKING:
    from recap.settings import Settings
    from recap.worker.jobs.resources import Resources

QA_PREFIX = "Question about our conversation: "
QA_SUFFIX = "\nAnswer with the specific detail only."


@dataclass
class Series:
    """What one system kept: retained specifics after each fold, and what it spent."""

    name: str
    total: int  # specifics planted
    after_fold: list[int] = field(default_factory=list)
    # Kept anywhere the system stores (Recap: summary, every memory, the window),
    # whether or not this context shows it; a peer stores only its context.
    stored_after_fold: list[int] = field(default_factory=list)
    stored: int | None = None
    folds: int = 0
    repairs: int = 0  # folds whose summary needed a repair call (Recap only)
    input_tokens: int = 0
    output_tokens: int = 0
    final: int | None = None  # retained at the end of the conversation
    qa_correct: int | None = None
    qa_asked: int = 0
    error: str | None = None
    # Recap only: where the stored specifics end (recap.evals.where.PLACES), its audit rows
    # summed, each applied fold's seconds, the messages after which a job dead-lettered.
    where: dict[str, int] = field(default_factory=dict)
    audit: Audit | None = None
    fold_seconds: list[float] = field(default_factory=list)
    dead_after: list[int] = field(default_factory=list)
    # Probes (recap.evals.probes): asked, answerable at reference from Recap's request,
    # and from the full history cut to the same window: ``window_tokens``, or the
    # size of Recap's request at that probe (``request_tokens``) when it is larger,
    # so the full history is never given less room than Recap took.
    probes: int = 0
    answerable: int = 0
    window_answerable: int = 0
    window_tokens: int = 0
    request_tokens: list[int] = field(default_factory=list)
    # The probes Recap's request could not answer: (kind, specific) of each.
    missed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def worst(self) -> int | None:
        return min(self.after_fold) if self.after_fold else self.final


def context_text(ctx: Any) -> str:
    """Everything a context shows the model, as one text (system + every text block)."""
    parts: list[str] = []

    def add(content: Any) -> None:
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    for key in ("text", "content", "thinking"):
                        add(block.get(key))
                    if "input" in block:
                        parts.append(str(block["input"]))

    add(ctx.get("system"))
    for message in ctx.get("messages", []):
        add(message.get("content"))
    return "\n".join(parts)


def _as_a_worker(job: Callable[[Any], Any], *, task_id: str, retries: int) -> Any:
    """``job(Job)``, asked again at once after a failure a worker would retry (a
    transient one: a timeout, an overloaded server), up to ``retries`` more attempts
    (RECAP_MAX_RETRIES): a slow local model's one late answer does not end the run."""
    from recap.worker.jobs.outcome import Job, is_transient

    attempt = 1
    while True:
        final = attempt > retries
        try:
            return job(Job(task_id=task_id, attempt=attempt, final_attempt=final))
        except Exception as exc:
            if final or not is_transient(exc):
                raise
            attempt += 1


Ask = Callable[[dict[str, Any]], str]  # a Messages API request (system, messages) -> answer


def run_recap(messages: Sequence[Message], facts: Sequence[Planted], *,
              ask: Ask | None = None, progress: Callable[[str], None] = lambda _: None,
              overrides: dict[str, Any] | None = None, stand_in: bool = False,
              probes: Sequence[Probe] = ()) -> Series:
    """Recap on ``messages`` with the process's settings and ``overrides`` (by field
    name: summarizer, key, URL), on files of its own.

    ``ask`` (for --qa) answers one request built by ``as_request(build_context(...))``.
    ``stand_in``: the model is the local stand-in, so the row never wears a Claude
    model's name. ``probes`` (recap.evals.probes) are asked after their message.
    """
    from recap.api.context import build_context
    from recap.api.ingest import add_message
    from recap.demo.run import file_paths, migrate, remove_files, use_files
    from recap.worker.jobs.resources import get_resources, reset_process_state

    data, broker = file_paths(None)
    series = Series("Recap", len(facts))
    try:
        settings = use_files(data, broker, **(overrides or {}))
        migrate(settings.database_url)
        res = get_resources()
        series.name = "Recap (stand-in)" if stand_in else f"Recap ({res.summarizer.model})"
        series.window_tokens = min(settings.context_budget_tokens, settings.llm_max_input_tokens)
        sid = f"eval-{uuid.uuid4().hex[:8]}"
        last_id = 0
        for i, (role, content) in enumerate(messages, start=1):
            last_id = add_message(sid, role, content)
            if role != "assistant" and i != len(messages):
                continue
            if not series.dead_after or _hook_would_queue(sid, settings):
                # dead-lettered: left alone, as the hook leaves it
                _jobs_after(i, sid, res=res, settings=settings, facts=facts, series=series,
                            progress=progress, total=len(messages))
            for probe in (p for p in probes if p.after == i):
                _probe(sid, probe, messages[:i], series=series, after=last_id)
        series.repairs = _repairs(sid)
        series.final = retained(facts, context_text(build_context(sid, system_prompt="")))
        series.stored = retained(facts, stored_text(sid))
        series.where, series.audit = where_kept(facts, sid), audit(sid)
        series.input_tokens += series.audit.unapplied_input_tokens
        series.output_tokens += series.audit.unapplied_output_tokens
        if ask is not None:
            series.qa_correct, series.qa_asked = quiz(
                facts, lambda q: _ask_in_session(sid, q, ask, after=last_id))
    except Exception as exc:  # report it in the table; the other systems still run
        series.error = f"{type(exc).__name__}: {exc}"
    finally:
        remove_files(data.parent)
        reset_process_state()  # back to the environment's settings
    return series


def _jobs_after(i: int, sid: str, *, res: Resources, settings: Settings, facts: Sequence[Planted],
                series: Series, progress: Callable[[str], None], total: int) -> None:
    """The summarize jobs after message ``i``, as a worker runs them until one has
    nothing more to do; each applied fold measured into ``series``."""
    from recap.api.context import build_context
    from recap.worker.jobs.summarize import summarize

    while True:
        try:
            outcome = _as_a_worker(lambda job: summarize(sid, job=job, res=res),
                                   task_id=f"eval-{i}", retries=settings.max_retries)
        except Exception as exc:
            if _last_run_status(sid) != "dead":
                raise
            series.dead_after.append(i)
            progress(f"  Recap job after message {i} dead-lettered, nothing of it "
                     f"applied: {type(exc).__name__}: {exc}")
            return
        if outcome.status in ("failed", "dead", "unrecorded"):
            raise RuntimeError(f"summarize job {outcome.status}: {outcome.error}")
        if outcome.status != "applied":
            return
        series.folds += 1
        series.fold_seconds.append((outcome.latency_ms or 0) / 1000)
        series.input_tokens += outcome.input_tokens or 0
        series.output_tokens += outcome.output_tokens or 0
        kept = retained(facts, context_text(build_context(sid, system_prompt="")))
        series.after_fold.append(kept)
        series.stored_after_fold.append(retained(facts, stored_text(sid)))
        progress(f"  Recap fold {series.folds} after message {i}: {kept}/{len(facts)} "
                 "specifics in the context")
        steps.report("messages through Recap", done=i, total=total)
        if not outcome.more_work:
            return


def _probe(session_id: str, probe: Probe, before: Sequence[Message], *, series: Series,
           after: int) -> None:
    """Judge ``probe`` (recap.evals.probes): stored as the newest user turn, so the
    memories shown are those relevant to it, then rewound away; and on the full
    history ``before`` it, cut to the same window (or to Recap's request, when that
    is larger)."""
    from recap.api.context import build_context
    from recap.api.ingest import add_message
    from recap.llm.tokens import count_tokens
    from recap.sessions.rewind import rewind

    add_message(session_id, "user", probe.turn)
    try:
        ctx = build_context(session_id, system_prompt="")
    finally:
        rewind(session_id, after)
    series.probes += 1
    found = answerable(probe, context_text(ctx))
    series.answerable += found
    if not found:
        series.missed.append((probe.fact.kind, probe.fact.expected))
    series.request_tokens.append(ctx["tokens"])
    series.window_answerable += answerable(probe, recent_window(
        [*before, ("user", probe.turn)], tokens=max(series.window_tokens, ctx["tokens"]),
        count=count_tokens))


def _hook_would_queue(session_id: str, settings: Settings) -> bool:
    """Whether the hook, after the reply just added, would queue a summarize job (a
    dead-lettered session waits for its cool-down unless its context nears the
    budget): the hook's own decision (recap.api.hook), without sending anything."""
    from datetime import UTC, datetime

    from recap.api.hook import counters_params, counters_statement, plan_counters
    from recap.db import transaction

    now = datetime.now(UTC)
    with transaction() as s:
        row = s.execute(counters_statement(server_clock=False),
                        counters_params(session_id, settings=settings, now=now)).first()
    return plan_counters(session_id, row, settings=settings, bound=now).summarize is not None


def _ask_in_session(session_id: str, question: str, ask: Ask, *, after: int) -> str:
    """Ask as a chat app does: the question is stored as the newest user turn (so the
    memories shown are those relevant to it), then rewound away (recap.rewind)."""
    from recap.api.context import as_request, build_context
    from recap.api.ingest import add_message
    from recap.sessions.rewind import rewind

    add_message(session_id, "user", question)
    try:
        return ask(as_request(build_context(session_id, system_prompt="")))
    finally:
        rewind(session_id, after)


def stored_text(session_id: str) -> str:
    """Everything Recap stores for the session: its summary, every memory of its
    scopes (shown or not), its active window."""
    from sqlalchemy import select

    from recap.db import transaction
    from recap.models import ChatMessage, ChatSession, Memory
    from recap.store.recall import session_scopes

    with transaction() as s:
        summary = s.scalar(select(ChatSession.rolling_summary)
                           .where(ChatSession.id == session_id)) or ""
        facts = s.scalars(select(Memory.fact).where(
            Memory.scope.in_(session_scopes(session_id, db=s))))
        window = s.scalars(select(ChatMessage.content)
                           .where(ChatMessage.session_id == session_id))
        return "\n".join([summary, *facts, *window])


def _last_run_status(session_id: str) -> str | None:
    """The status of the session's latest summary run (recap.worker.jobs.outcome.Status)."""
    from sqlalchemy import select

    from recap.db import transaction
    from recap.models import SummaryRun

    with transaction() as s:
        return s.scalar(select(SummaryRun.status).where(SummaryRun.session_id == session_id)
                        .order_by(SummaryRun.id.desc()).limit(1))


def _repairs(session_id: str) -> int:
    """Applied runs that made a repair call (0 where the column does not exist)."""
    from sqlalchemy import func, select

    from recap.db import transaction
    from recap.models import SummaryRun

    repaired = getattr(SummaryRun, "repaired", None)
    if repaired is None:
        return 0
    with transaction() as s:
        return int(s.scalar(select(func.count()).where(
            SummaryRun.session_id == session_id, SummaryRun.status == "applied",
            repaired.is_(True))) or 0)


def quiz(facts: Sequence[Planted], answer: Callable[[str], str]) -> tuple[int, int]:
    """(correct, asked) over the facts that have a question."""
    correct = asked = 0
    for fact in facts:
        if not fact.question:
            continue
        asked += 1
        reply = answer(QA_PREFIX + fact.question + QA_SUFFIX)
        correct += retained([fact], reply)
    return correct, asked


def run_peer(name: str, runner: Callable[..., Any], messages: Sequence[Message],
             facts: Sequence[Planted], *, base_url: str | None, ask: Ask | None = None,
             progress: Callable[[str], None] = lambda _: None) -> Series:
    """One peer (recap.evals.peers) on ``messages``, observed after each of its folds."""
    series = Series(name, len(facts))
    last: list[str] = [""]

    def on_fold(text: str) -> None:
        series.folds += 1
        kept = retained(facts, text)
        series.after_fold.append(kept)
        progress(f"  {name} fold {series.folds}: {kept}/{len(facts)} specifics in its context")

    def on_context(text: str) -> None:
        last[0] = text

    try:
        run = runner(list(messages), base_url, on_fold=on_fold, on_context=on_context)
    except ImportError as exc:  # the peers are the bench extra's
        series.error = f"not installed ({exc.name}): pip install 'recap-worker[bench]'"
        return series
    series.name = run.name
    series.error = run.error
    series.input_tokens, series.output_tokens = run.input_tokens, run.output_tokens
    series.final = retained(facts, last[0])
    series.stored = series.final
    series.stored_after_fold = list(series.after_fold)
    if ask is not None and not series.error:
        request = {"system": last[0] or "(no context)", "messages": []}
        series.qa_correct, series.qa_asked = quiz(
            facts, lambda q: ask({**request, "messages": [{"role": "user", "content": q}]}))
    return series
