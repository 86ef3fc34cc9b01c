"""Full history with caching plus server-side compaction: the peer an app gets when
the Messages API summarises the conversation itself, modelled on the
``compact_20260112`` context-management edit (beta ``compact-2026-01-12``) and on
on-demand compaction (the request's ``compaction: {"type": "summarize"}``), with the
shapes of the SDK's types (``BetaCompact20260112EditParam``, ``BetaCompactionBlock``,
``BetaCompactionIterationUsage``).

**The threshold edit** (:class:`Compact`). The app sends the whole history on every
request. When a request's input tokens pass ``trigger`` (default 150,000; the API
refuses less than 50,000), the API first runs a compaction iteration: it summarises
the conversation it was sent and puts the summary in a ``compaction`` block, the
first block of its reply; the reply itself is sampled from the summary. The app
keeps the reply as it came, block included, and sends it back unchanged; the API
then drops every message block before the last compaction block, so later
requests read the system prompt, the summary and what came after it. The
iteration is billed in ``usage.iterations`` (not in the top-level fields) at the
reply model's rates. ``pause_after_compaction`` (default off) is not modelled.

**On demand** (:class:`OnDemand`). The app asks for compaction at a point of its
choosing, with a request of its own whose reply holds the compaction block alone;
later requests send that block first, in place of the messages it summarises. The
rule here: before a reply whose request would pass :data:`ON_DEMAND_SHARE` of the
peers' budget (80% of 32,000: where LangChain and LangMem summarise), the app
compacts everything but the last exchange (the newest assistant message and the
user turn after it stay verbatim, so a tool call stays with its result).

**Which trigger.** Two rows of the threshold edit: its defaults, and
:func:`fitted_trigger`: half the workload's largest session, at least the API's
50,000 and at most 100,000 (so it fires about midway, at least twice on a session
past 200,000, and no request nears the model's 200,000-token window). One rule for
every workload, none tuned. A session that never passes the trigger is full
history under the model's window: the row *does not act* there (:func:`acts`).
Neither edit drops messages over the peers' 32k budget: keeping the context in
bounds is what compaction is for (a request past the model's window raises
:class:`ContextWindowExceeded`).

**What the summary says.** Whatever summariser is passed in; the verdict passes the
stand-in's (bench.verdict.drive), which in neutral mode answers every summariser by
one rule (recap.testing.neutral): the conversation goes to it as text turns (as the
text-only peers get it, recap.bench.harness.pricing.flat), the summary is at most
:data:`SUMMARY_TOKENS`, the peers' summary size, so every summariser gets the same
digest.

**What it costs.** The requests are priced as the API reads them (:func:`as_read`)
with the cache model every system gets (recap.testing.request_usage, breakpoints
where full history places them): after a compaction the cached prefix ends at the
system prompt and everything after it is written anew. Each compaction, automatic
or on demand, is billed as :func:`billed` says (the one place that says how): what
it read and what it wrote, at the reply model's rates whatever summarizer the
other systems are priced at, as the API bills its iteration (base input, and
output at the price rule's output ratio: recap.bench.harness.pricing.Spent).
Pure: messages and a summariser in, requests out.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.verdict.shapes import Content, Message
from recap.bench.harness import env as benv
from recap.bench.harness.pricing import EPHEMERAL, Spent, flat

EDIT_TYPE = "compact_20260112"
BETA = "compact-2026-01-12"
DEFAULT_TRIGGER = 150_000  # the edit's documented default, in input tokens
MIN_TRIGGER = 50_000  # the API refuses a lower trigger
FITTED_MAX = 100_000  # the fitted trigger's ceiling: fires before requests near the window
CONTEXT_WINDOW = 200_000  # the reply model's context window, in tokens
ON_DEMAND_SHARE = 0.8  # on demand: compact past this share of the peers' budget
SUMMARY_TOKENS = 1_024  # the summary's max_tokens: the peers' (recap.evals.peers)

COMPACT_ASK = "Summarize the conversation above so that it can continue from the summary."
# (role, text) turns and the edit's instructions -> the summary
Summarize = Callable[[Sequence[tuple[str, str]], str | None], str]
Count = Callable[[str], int]


class TriggerTooLow(ValueError):
    """A compaction trigger under the API's minimum (the API answers 400)."""


class ContextWindowExceeded(ValueError):
    """A request the API would refuse: more input tokens than the model's window."""


@dataclass(frozen=True)
class Compact:
    """The ``compact_20260112`` edit's parameters, at its documented defaults."""

    trigger: int = DEFAULT_TRIGGER  # input tokens of the request that fire it
    instructions: str | None = None  # added to the server's summarising prompt

    def __post_init__(self) -> None:
        if self.trigger < MIN_TRIGGER:
            raise TriggerTooLow(f"compact_20260112 trigger {self.trigger:,} is under the "
                                f"API's minimum of {MIN_TRIGGER:,} input tokens")

    def param(self) -> dict[str, Any]:
        """The edit as a request's ``context_management.edits`` entry."""
        edit: dict[str, Any] = {"type": EDIT_TYPE,
                                "trigger": {"type": "input_tokens", "value": self.trigger}}
        if self.instructions:
            edit["instructions"] = self.instructions
        return edit

    def label(self) -> str:
        return f"trigger {self.trigger // 1000}k"


@dataclass(frozen=True)
class OnDemand:
    """On-demand compaction: the app compacts past ``share`` of ``budget``."""

    budget: int
    share: float = ON_DEMAND_SHARE
    instructions: str | None = None

    @property
    def at(self) -> int:
        return int(self.budget * self.share)

    def param(self) -> dict[str, Any]:
        """The request's top-level ``compaction`` parameter."""
        config: dict[str, Any] = {"type": "summarize"}
        if self.instructions:
            config["instructions"] = self.instructions
        return config

    def label(self) -> str:
        return f"on demand at {self.share:.0%} of the {self.budget // 1000}k budget"


@dataclass(frozen=True)
class Iteration:
    """One compaction, as ``usage.iterations`` reports it: what it read, what it wrote."""

    input_tokens: int
    output_tokens: int

    def usage(self) -> dict[str, Any]:
        """The ``BetaCompactionIterationUsage`` entry."""
        return {"type": "compaction", "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0}


def billed(iterations: Sequence[Iteration]) -> Spent:
    """What compactions are billed for: the tokens each read and wrote, at the reply
    model's rates (its iteration is a call of the reply model)."""
    return Spent(sum(i.input_tokens for i in iterations),
                 sum(i.output_tokens for i in iterations), at_reply_rates=True)


@dataclass
class CompactionRun:
    """One session under compaction: each request as the app sent it, as the API
    read it (the one priced and judged), and the compactions."""

    sent: list[dict[str, Any]] = field(default_factory=list)
    read: list[dict[str, Any]] = field(default_factory=list)
    iterations: list[Iteration] = field(default_factory=list)
    fired: list[int] = field(default_factory=list)  # the replies a compaction came before

    @property
    def billed(self) -> Spent:
        return billed(self.iterations)


def fitted_trigger(session_tokens: Sequence[int]) -> int:
    """The trigger that fires on a workload whose sessions have these sizes: half the
    largest, rounded down to a thousand, between MIN_TRIGGER and FITTED_MAX."""
    half = max(session_tokens, default=0) // 2 // 1000 * 1000
    return max(MIN_TRIGGER, min(FITTED_MAX, half))


def acts(run: CompactionRun) -> bool:
    """Whether a compaction happened at all (else the row is full history)."""
    return bool(run.iterations)


def block(summary: str) -> dict[str, Any]:
    """A ``compaction`` content block holding ``summary`` (the reply's first block)."""
    return {"type": "compaction", "content": summary}


def _blocks(content: Content) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _last_compaction(messages: Sequence[dict[str, Any]]) -> tuple[int, int] | None:
    """(message, block) of the last compaction block, or None."""
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i]["content"]
        if isinstance(content, list):
            for j in range(len(content) - 1, -1, -1):
                if content[j].get("type") == "compaction":
                    return i, j
    return None


def as_read(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as the API reads it: every message block before the last compaction
    block dropped, and that block as the text of its summary (the bench's judges and
    its price read text blocks). Unchanged without a compaction block."""
    at = _last_compaction(body["messages"])
    if at is None:
        return body
    i, j = at
    first = body["messages"][i]
    content = first["content"]
    head = dict(content[j])
    summary = {"type": "text", "text": head.get("content") or ""}
    if "cache_control" in head:
        summary["cache_control"] = head["cache_control"]
    blocks = [summary, *content[j + 1:]]
    return dict(body, messages=[dict(first, content=blocks), *body["messages"][i + 1:]])


def request(messages: Sequence[Message]) -> dict[str, Any]:
    """A request of ``messages`` with full history's breakpoints (the system prompt,
    the last turn's last block), block form kept."""
    out: list[dict[str, Any]] = [{"role": role, "content": _blocks(c)} for role, c in messages]
    if out:
        last = out[-1]["content"]
        out[-1] = {"role": out[-1]["role"],
                   "content": [*last[:-1], dict(last[-1], cache_control=EPHEMERAL)]}
    return {"system": [{"type": "text", "text": benv.SYSTEM_PROMPT,
                        "cache_control": EPHEMERAL}], "messages": out}


def tokens(body: dict[str, Any], count: Count) -> int:
    """Input tokens of a request as read (system + each block as text)."""
    read = as_read(body)
    system = sum(count(str(b.get("text", ""))) for b in read.get("system") or [])
    return system + sum(count(flat(m["content"])) for m in read["messages"])


def turns(messages: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """The conversation as (role, text) turns for the summariser: a compaction block
    as its summary, tool calls and results inline."""
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, list):
            content = [{"type": "text", "text": b.get("content") or ""}
                       if b.get("type") == "compaction" else b for b in content]
        text = flat(content)
        if text.strip():
            out.append((m["role"], text))
    return out


def prompt(conversation: Sequence[tuple[str, str]], instructions: str | None) -> dict[str, Any]:
    """The summarising request a compaction makes of the conversation (for a
    stand-in summariser): the turns as ``<message>`` elements in one user turn,
    then the ask. The server's own prompt is not public; the neutral stand-in reads
    only the elements."""
    lines = [f'<message role="{role}">\n{html.escape(text)}\n</message>'
             for role, text in conversation]
    ask = COMPACT_ASK + (f"\n\n{instructions}" if instructions else "")
    return {"max_tokens": SUMMARY_TOKENS,
            "messages": [{"role": "user", "content": "\n".join([*lines, ask])}]}


def _within_window(size: int) -> None:
    if size > CONTEXT_WINDOW:
        raise ContextWindowExceeded(f"a request of {size:,} input tokens is over the "
                                    f"model's {CONTEXT_WINDOW:,}-token window")


def compact_history(messages: Sequence[Message], edit: Compact, *, summarize: Summarize,
                    count: Count) -> CompactionRun:
    """After each user message: the request the app sends (its whole history, every
    reply kept as it came, compaction blocks included), and what the API read. A
    request past ``edit.trigger`` is compacted first; its reply is sampled from the
    summary alone."""
    run = CompactionRun()
    history: list[Message] = []
    pending: dict[str, Any] | None = None  # the block the API put first in its reply
    for role, content in messages:
        if role == "assistant":
            reply = [pending, *_blocks(content)] if pending is not None else content
            history.append(("assistant", reply))
            pending = None
            continue
        history.append((role, content))
        body = dict(request(history), context_management={"edits": [edit.param()]})
        size = tokens(body, count)
        _within_window(size)
        run.sent.append(body)
        if size <= edit.trigger:
            run.read.append(as_read(body))
            continue
        summary = summarize(turns(as_read(body)["messages"]), edit.instructions)
        pending = block(summary)
        run.iterations.append(Iteration(size, count(summary)))
        run.fired.append(len(run.read))
        # The reply is sampled from the summary: the client's breakpoint was on a
        # block now compacted away, so only the system prompt is cached.
        run.read.append(dict(body, messages=[{"role": "assistant", "content": [
            {"type": "text", "text": summary}]}]))
    return run


def on_demand_history(messages: Sequence[Message], rule: OnDemand, *, summarize: Summarize,
                      count: Count) -> CompactionRun:
    """After each user message: the request the app sends; before one past
    ``rule.at``, a compaction of all but the last exchange, whose block the app
    sends first from then on, in place of the messages it summarises."""
    run = CompactionRun()
    history: list[Message] = []
    for role, content in messages:
        history.append((role, content))
        if role != "user":
            continue
        body = request(history)
        size = tokens(body, count)
        tail = _last_exchange(history)
        if size > rule.at and tail > 0 and not _only_a_block(history[:tail]):
            compacted = request(history[:tail])
            summary = summarize(turns(compacted["messages"]), rule.instructions)
            run.iterations.append(Iteration(tokens(compacted, count), count(summary)))
            run.fired.append(len(run.read))
            history = [("user", [block(summary)]), *history[tail:]]
            body = request(history)
            size = tokens(body, count)
        _within_window(size)
        run.sent.append(body)
        run.read.append(as_read(body))
    return run


def _last_exchange(history: Sequence[Message]) -> int:
    """Where the last exchange starts: the newest assistant message before the
    newest user turn (0 when there is none)."""
    for i in range(len(history) - 2, -1, -1):
        if history[i][0] == "assistant":
            return i
    return 0


def _only_a_block(head: Sequence[Message]) -> bool:
    """Whether ``head`` is a compaction block alone (nothing new to compact)."""
    return (len(head) == 1 and isinstance(head[0][1], list)
            and all(b.get("type") == "compaction" for b in head[0][1]))
