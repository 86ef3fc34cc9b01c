"""Whether and what to summarize: a pure decision over plain values.

No I/O and no imports from SQLAlchemy, Celery, settings or the SDK, so the rules
read as tables in tests (``tests/core/planning/test_policy.py``).

Rules, in order:
- usage = (summary tokens + active tokens) / context budget.
- usage above 95%: *aggressive*, every non-pinned message outside the newest 5.
  If the newest 5, the pinned ones and the summary still exceed the budget, the
  session needs escalation (a human or the app must act).
- otherwise the *candidate batch* is the oldest ``batch_size`` non-pinned
  messages outside the newest ``keep_recent``.
- usage 80-95%: summarize the candidate batch (*capacity*).
- below 80%: summarize it only when active messages > ``trigger_messages`` and
  batch tokens > ``trigger_tokens`` (*normal*; equality does not trigger).
- a ``tool_use`` and the ``tool_result`` blocks answering it (matched by id,
  whatever rows they arrive in) form one unit with every message between them;
  legacy ``tool`` rows without ids join the assistant turn right before them. A
  batch takes or leaves the whole unit, and a pinned member pins the unit.
- ``force`` (``recap summarize ID --force``): when none of the rules above fires,
  summarize the candidate batch anyway (*forced*).
- ``condense_to`` (cache-aware, 0 = off): a normal, capacity or forced fold goes
  on past the candidate batch, oldest units first under the same rules (keep
  window, units, pinned, the job's token cap), until summary + the rest fit
  ``condense_to`` of the budget. Fewer, bigger folds: the prompt's prefix (the
  summary) changes less often, so replies rewrite Claude's cache less often and
  fewer summary calls re-send the summary; each message is still sent about once.
  Triggers are unchanged, so :func:`might_trigger` and ``normal_blocked`` are too.
- ``adaptive``: the normal rule gives way to the session's own high-water mark,
  keep window and low-water mark (:func:`adapt`); past the mark a fold is priced
  against the cached prefix it rewrites (recap.core.planning.pricing) and waits
  while keeping the prefix is cheaper; capacity and aggressive stay.

:func:`recap.core.planning.outlook.outlook` explains a plan that does not fire.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from recap.core.planning import adaptive
from recap.core.planning.adaptive import RECALL_COVER
from recap.core.planning.prices import DEFAULT_PRICES, Prices
from recap.core.planning.pricing import EXPECTED_ATTEMPTS


class Mode(StrEnum):
    """Which rule made a plan; carried from the plan to the job's outcome and its audit row."""

    NONE = "none"  # no rule fires: nothing to condense
    NORMAL = "normal"
    CAPACITY = "capacity"
    AGGRESSIVE = "aggressive"
    FORCED = "forced"  # recap summarize --force

CAPACITY_USAGE = 0.80
AGGRESSIVE_USAGE = 0.95
AGGRESSIVE_KEEP = 5
# Most messages one job condenses even in aggressive mode: the apply deletes them
# with one bound IN list, and drivers cap parameters per statement (65,535).
MAX_BATCH_MESSAGES = 10_000


@dataclass(frozen=True)
class Thresholds:
    trigger_messages: int
    trigger_tokens: int
    batch_size: int
    keep_recent: int
    context_budget_tokens: int
    # Most tokens one job may condense, so a job's calls fit its time limit; the
    # rest waits for the follow-up job. None: no cap.
    max_batch_tokens: int | None = None
    # Share of the budget a fold condenses down to (low-water mark); 0: the batch only.
    condense_to: float = 0.0
    # RECAP_POLICY=adaptive: :func:`adapt` derives the session's own thresholds.
    adaptive: bool = False
    memory_limit: int = 0  # RECAP_MEMORY_BUDGET_TOKENS, from which adaptive sizes the block
    fold_at: int = 0  # adapted: fold when summary + active tokens pass this (0: no such rule)
    recall_cover: float = RECALL_COVER  # what later replies still reach (adaptive.sizing)
    # Attempts a fold call is expected to take (resends, retries), for the adaptive
    # policy's pricing of a fold against the cached prefix (pricing.choose).
    expected_attempts: float = EXPECTED_ATTEMPTS
    # The session's reply model's and the summarizer's prices (pricing.choose,
    # clearing.clearing_pays).
    prices: Prices = DEFAULT_PRICES


@dataclass(frozen=True)
class MessageInfo:
    id: int
    role: str
    token_count: int
    pinned: bool = False
    calls: tuple[str, ...] = ()  # ids of the tool_use blocks this message makes
    answers: tuple[str, ...] = ()  # tool_use ids its tool_result blocks answer


@dataclass(frozen=True)
class Plan:
    batch_ids: tuple[int, ...]
    mode: Mode
    reason: str
    needs_escalation: bool = False
    batch_tokens: int = 0
    # The normal rule cannot fire until a summary is applied: its batch is full
    # (new messages only add candidates after it) and still under the token trigger.
    normal_blocked: bool = False

    @property
    def should_summarize(self) -> bool:
        return bool(self.batch_ids)


def usage(summary_tokens: int, active_tokens: int, budget: int) -> float:
    return (summary_tokens + active_tokens) / budget


NEVER = 2**62  # a trigger the adapted thresholds never reach


def adapt(t: Thresholds, *, message_count: int, active_tokens: int,
          summary_tokens: int) -> tuple[Thresholds, adaptive.Sizing | None]:
    """``t`` for a session's counters, with the adaptive sizing (None: fixed rule)."""
    if not t.adaptive:
        return t, None
    s = adaptive.sizing(message_count=message_count, active_tokens=active_tokens,
                        summary_tokens=summary_tokens, budget=t.context_budget_tokens,
                        keep_recent=t.keep_recent, memory_limit=t.memory_limit,
                        recall_cover=t.recall_cover, expected_attempts=t.expected_attempts,
                        prices=t.prices)
    return replace(t, trigger_messages=NEVER, trigger_tokens=NEVER, keep_recent=s.keep_recent,
                   condense_to=s.low_water / t.context_budget_tokens, adaptive=False,
                   fold_at=s.fold_at), s


def might_trigger(*, message_count: int, active_tokens: int, summary_tokens: int,
                  t: Thresholds, normal_blocked: bool = False) -> bool:
    """Cheap pre-check from counters alone: False means ``plan`` surely says no.

    The batch's tokens never exceed the active tokens, so the normal trigger
    needs active_tokens > trigger_tokens (and not ``normal_blocked``, which the
    last plan recorded); the capacity rules need usage >= 80%. The adaptive
    high-water mark comes from these counters: this is the plan's own rule.
    """
    if message_count == 0:
        return False
    t, _ = adapt(t, message_count=message_count, active_tokens=active_tokens,
                 summary_tokens=summary_tokens)
    if t.fold_at and summary_tokens + active_tokens > t.fold_at:
        return True
    if (not normal_blocked and message_count > t.trigger_messages
            and active_tokens > t.trigger_tokens):
        return True
    return usage(summary_tokens, active_tokens, t.context_budget_tokens) >= CAPACITY_USAGE


def units(messages: Sequence[MessageInfo]) -> list[list[MessageInfo]]:
    """Consecutive messages that must be condensed together: each tool_use with the
    messages up to the last tool_result answering it (by id), and an assistant turn
    with the legacy ``tool`` rows (no ids) right after it."""
    units: list[list[MessageInfo]] = []
    for m, joined in zip(messages, _joins(messages), strict=True):
        if joined and units:
            units[-1].append(m)
        else:
            units.append([m])
    return units


def _joins(messages: Sequence[MessageInfo]) -> list[bool]:
    """For each message, whether it belongs to the unit of the message before it."""
    joins = [False] * len(messages)  # joins[i]: message i belongs to the unit of i - 1
    called_at: dict[str, int] = {}
    for i, m in enumerate(messages):
        for ident in m.answers:
            j = called_at.get(ident)
            if j is not None:
                for k in range(j + 1, i + 1):
                    joins[k] = True
        if m.role == "tool" and not m.answers and i:
            start = i - 1
            while start and joins[start]:
                start -= 1
            joins[i] = messages[start].role == "assistant"
        for ident in m.calls:
            called_at[ident] = i
    return joins


def _select(messages: Sequence[MessageInfo], *, keep: int, limit: int | None,
            max_tokens: int | None, enough: int | None = None) -> list[MessageInfo]:
    """Oldest non-pinned units wholly outside the newest ``keep`` messages.

    Stops before a unit that would pass ``limit`` messages or ``max_tokens``
    tokens, except that the first unit is always taken so the session progresses,
    and after the unit that brings the tokens taken to ``enough``.
    """
    cutoff = len(messages) - keep  # messages[:cutoff] are outside the keep window
    chosen: list[MessageInfo] = []
    seen = tokens = 0
    for unit in units(messages):
        if seen + len(unit) > cutoff:
            break  # this unit reaches into the keep window: keep all of it
        seen += len(unit)
        if any(m.pinned for m in unit):
            continue
        unit_tokens = sum(m.token_count for m in unit)
        if chosen and ((limit is not None and len(chosen) + len(unit) > limit)
                       or (max_tokens is not None and tokens + unit_tokens > max_tokens)):
            break
        chosen.extend(unit)
        tokens += unit_tokens
        if (limit is not None and len(chosen) >= limit) or (enough is not None
                                                            and tokens >= enough):
            break
    return chosen


def _to_low_water(messages: Sequence[MessageInfo], batch: list[MessageInfo], *,
                  summary_tokens: int, active_tokens: int, t: Thresholds) -> list[MessageInfo]:
    """``batch`` extended, oldest units first, until summary + the rest fit
    ``t.condense_to`` of the budget (as far as the keep window, pins and the job's
    token cap allow). Both selections walk the same units in the same order, so
    the longer one starts with the shorter."""
    if not t.condense_to:
        return batch
    excess = summary_tokens + active_tokens - int(t.condense_to * t.context_budget_tokens)
    if excess <= sum(m.token_count for m in batch):
        return batch
    deeper = _select(messages, keep=t.keep_recent, limit=MAX_BATCH_MESSAGES,
                     max_tokens=t.max_batch_tokens, enough=excess)
    return deeper if len(deeper) > len(batch) else batch


def plan(messages: Sequence[MessageInfo], *, summary_tokens: int,
         t: Thresholds, force: bool = False) -> Plan:
    """Decide what to summarize. ``messages`` are the active ones, oldest first.

    With ``force``, a candidate batch that no rule takes is taken anyway (mode
    ``forced``, its reason the one the rules gave for not firing).
    """
    active_tokens = sum(m.token_count for m in messages)
    t, sized = adapt(t, message_count=len(messages), active_tokens=active_tokens,
                     summary_tokens=summary_tokens)
    use = usage(summary_tokens, active_tokens, t.context_budget_tokens)
    pct = f"{use:.0%} of the {t.context_budget_tokens}-token budget"

    if use > AGGRESSIVE_USAGE:
        everything = _select(messages, keep=AGGRESSIVE_KEEP, limit=None, max_tokens=None)
        taken = {m.id for m in everything}
        remaining = summary_tokens + sum(m.token_count for m in messages
                                         if m.id not in taken)
        batch = _select(messages, keep=AGGRESSIVE_KEEP, limit=MAX_BATCH_MESSAGES,
                        max_tokens=t.max_batch_tokens)
        escalate = remaining > t.context_budget_tokens
        reason = f"aggressive: context at {pct}"
        if escalate:
            reason += (f"; needs escalation: the newest {AGGRESSIVE_KEEP}, pinned messages and "
                       f"the summary alone take {remaining} tokens")
        return _plan(batch, Mode.AGGRESSIVE, reason, escalate)

    batch = _select(messages, keep=t.keep_recent, limit=t.batch_size,
                    max_tokens=t.max_batch_tokens)
    batch_tokens = sum(m.token_count for m in batch)

    def fold(mode: Mode, why: str) -> Plan:
        taken = _to_low_water(messages, batch, summary_tokens=summary_tokens,
                              active_tokens=active_tokens, t=t)
        if len(taken) > len(batch):
            why += f"; condensing to {t.condense_to:.0%} of the budget"
        return _plan(taken, mode, why)

    if use >= CAPACITY_USAGE:
        return fold(Mode.CAPACITY, f"capacity: context at {pct}")
    context = summary_tokens + active_tokens
    if sized and context > t.fold_at:
        return fold(Mode.NORMAL, f"adaptive: {sized.reason}; context {context} tokens")
    if len(messages) > t.trigger_messages and batch_tokens > t.trigger_tokens:
        return fold(Mode.NORMAL, f"normal: {len(messages)} messages > {t.trigger_messages} and "
                    f"batch {batch_tokens} tokens > {t.trigger_tokens}")
    candidates = _select(messages, keep=t.keep_recent, limit=None, max_tokens=None)
    full = len(batch) >= t.batch_size or len(batch) < len(candidates)
    reason = (f"below thresholds: {len(messages)} messages, batch {batch_tokens} tokens, "
              f"context at {pct}") if sized is None else (
        f"{_where(context, sized.high_water)}: {sized.reason}; context {context} tokens")
    blocked = full and batch_tokens <= t.trigger_tokens
    if force:
        forced = fold(Mode.FORCED, f"forced: {reason}")
        return Plan(forced.batch_ids, forced.mode, forced.reason,
                    batch_tokens=forced.batch_tokens, normal_blocked=blocked)
    return Plan((), Mode.NONE, reason, normal_blocked=blocked)


def _where(context: int, high_water: int) -> str:
    """Where an adaptive session that does not fold is: under its mark, or past it
    and waiting because the priced choice is to wait (the reason says why)."""
    if context <= high_water:
        return "below the high-water mark"
    return "past the high-water mark, waiting"


def _plan(batch: list[MessageInfo], mode: Mode, reason: str,
          escalate: bool = False) -> Plan:
    if not batch:
        return Plan((), Mode.NONE, reason + "; nothing outside the keep window can be condensed",
                    needs_escalation=escalate)
    return Plan(tuple(m.id for m in batch), mode, reason, escalate,
                sum(m.token_count for m in batch))


def retry_delay(retries: int, *, retry_after: float | None, base: float, cap: float,
                rand: float) -> float:
    """Seconds before retry number ``retries + 1``: exponential backoff, full jitter.

    ``rand`` is a number in [0, 1). A server's ``retry-after`` is a floor, and
    everything is capped so one job cannot park itself for hours.
    """
    delay = rand * min(cap, base * 2.0 ** retries)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return min(cap, delay)
