"""Why a session is (or is not) summarized now, and what triggers its next summary
(pure): :func:`outlook` explains a :func:`recap.core.planning.policy.plan` that does not
fire (``recap stats``, ``recap context``, ``recap sessions``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from recap.core.planning.policy import (
    CAPACITY_USAGE,
    MessageInfo,
    Plan,
    Thresholds,
    adapt,
    plan,
    usage,
)

State = Literal["due", "empty", "few-messages", "small-batch", "normal-blocked",
                "below-high-water", "nothing-to-condense"]


@dataclass(frozen=True)
class Outlook:
    """Why a session is (or is not) summarized now, and what triggers its next summary."""

    plan: Plan  # what a job would do now
    state: State  # "due": a job would condense plan.batch_ids now
    why: str
    trigger: str  # what makes a job condense something ("" when due)
    forced_messages: int  # what a forced job would condense now (0: nothing can be)
    forced_tokens: int


def tokens_to_capacity(summary_tokens: int, active_tokens: int, budget: int) -> int:
    """More context tokens needed before the capacity rule fires (0: it does).

    Closed form, then at most a step either way so the answer agrees with the
    rule's own floating-point test (:func:`usage`) to the token; never a loop whose
    length depends on the budget."""
    def fires(more: int) -> bool:
        return usage(summary_tokens, active_tokens + more, budget) >= CAPACITY_USAGE

    need = max(0, math.ceil(CAPACITY_USAGE * budget) - summary_tokens - active_tokens)
    for _ in range(2):  # the float product is off by an ulp at most
        if need and fires(need - 1):
            need -= 1
        elif not fires(need):
            need += 1
    return need


def outlook(messages: Sequence[MessageInfo], *, summary_tokens: int,
            t: Thresholds) -> Outlook:
    """:func:`plan` for ``messages``, explained: why no rule fires (if none does) and
    what will make one fire. The figures are the plan's own; nothing is re-decided."""
    now = plan(messages, summary_tokens=summary_tokens, t=t)
    forced = now if now.should_summarize else plan(messages, summary_tokens=summary_tokens,
                                                   t=t, force=True)
    n_forced, forced_tokens = len(forced.batch_ids), forced.batch_tokens
    if now.should_summarize:
        return Outlook(now, "due", now.reason, "", n_forced, forced_tokens)
    active = sum(m.token_count for m in messages)
    more = tokens_to_capacity(summary_tokens, active, t.context_budget_tokens)
    capacity = (f"the context reaching {CAPACITY_USAGE:.0%} of the {t.context_budget_tokens}"
                f"-token budget ({more} more tokens)")
    stuck = Outlook(now, "nothing-to-condense", now.reason,
                    "nothing Recap can condense: unpin messages or raise the context budget"
                    if now.needs_escalation else
                    f"more messages than the newest {t.keep_recent} (the keep window) "
                    "that are not pinned", 0, 0)
    if not messages:
        return Outlook(now, "empty", "no active messages", "new messages", 0, 0)
    if more == 0:  # capacity or aggressive fired, and found nothing it may take
        return stuck
    _, sized = adapt(t, message_count=len(messages), active_tokens=active,
                     summary_tokens=summary_tokens)
    if sized is not None:  # RECAP_POLICY=adaptive
        below = sized.fold_at - summary_tokens - active + 1
        mark = (f"the context passing the high-water mark of {sized.high_water} tokens "
                f"({below} more; the mark follows the session's reply sizes)"
                if sized.choice is None else
                f"a fold paying for itself ({sized.choice.reason}), or the context "
                f"passing {sized.fold_at} tokens ({below} more)")
        return Outlook(now, "below-high-water", now.reason, f"{mark}, or {capacity}",
                       n_forced, forced_tokens)
    batch = (f"the candidate batch ({n_forced} oldest messages, {forced_tokens} tokens) is "
             f"not over {t.trigger_tokens} tokens")
    if now.normal_blocked:
        return Outlook(now, "normal-blocked",
                       f"{batch} and is full (up to {t.batch_size} messages), so new messages "
                       "cannot grow it: the normal rule cannot fire before the next summary",
                       capacity, n_forced, forced_tokens)
    if len(messages) <= t.trigger_messages:
        return Outlook(now, "few-messages",
                       f"{len(messages)} messages, not over {t.trigger_messages}",
                       f"over {t.trigger_messages} messages "
                       f"({t.trigger_messages + 1 - len(messages)} more) with a candidate "
                       f"batch over {t.trigger_tokens} tokens (now {forced_tokens}), or "
                       + capacity, n_forced, forced_tokens)
    if not forced.should_summarize:  # every message outside the keep window is pinned
        return stuck
    return Outlook(now, "small-batch", batch,
                   f"the candidate batch (up to {t.batch_size} messages) passing "
                   f"{t.trigger_tokens} tokens, or " + capacity, n_forced, forced_tokens)
