"""Whether a fold pays for itself against a warm prompt cache. Pure.

Claude's prompt cache makes a long prompt cheap to keep: each reply reads the
cached prefix at the reply model's cache-read price (0.1x its input on most
models, 0.05x or 0.025x on some) and writes only what is new. An action that
shrinks the prompt is paid for at once and saves a little on every reply after it:

- its own model call, at the summarizer model's prices: the batch it reads, the
  previous summary and the prompt's instructions (PROMPT_TOKENS) as input, and the
  answer it writes (the new summary: the previous one plus KEPT_SHARE of the
  batch) as output, times the attempts the call is expected to take (resends
  after a frozen answer, retries); ``expected_attempts`` (EXPECTED_ATTEMPTS: the
  hook and the job decide from the same counters, so both use it);
- the cache write it causes: it changes a block near the start of the prompt, so
  the next reply writes everything after that block again, once, at the reply
  model's cache-write price (1.25x input for the 5-minute lifetime, 2x for 1 hour);
- the cache reads it saves: the tokens it removes are not read again, at the
  reply model's cache-read price a reply, over the replies the session is
  expected to have left.

The prices are a :class:`recap.core.planning.prices.Prices`: the session's reply
model's and the summarizer's rows of the price table.

The fold is made when what it saves is more than what it costs; otherwise
the session waits, its cached prefix being the cheaper thing to keep. The
capacity rule is not priced: a context about to pass its budget is folded
whatever the sums say (``over_capacity``). Clearing old tool results (stubs in
their place, recap.core.planning.clearing) is priced by the same :func:`price`,
with no call; a job clears before it decides whether to fold.

All figures are in the reply model's base-input tokens (1.0 = one uncached input
token of the reply model; :meth:`Prices.usd` turns them into dollars), so a
:class:`Choice` says in one unit why it chose what it did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from recap.core.planning.prices import DEFAULT_PRICES, Prices

# Tokens of a fold call's own prompt besides the batch and the previous summary:
# the summarizer's instructions, the message wrappers and the answer's schema.
PROMPT_TOKENS = 500
# Attempts one fold call takes on average: most calls answer at once; a frozen
# or truncated answer is resent and a transient error retried. A design value,
# not the model's observed rate (the hook reads counters only).
EXPECTED_ATTEMPTS = 1.2
# Share of what a fold condenses that comes back as summary and memories: the
# prompt shrinks by the rest. A design value (the summary's share of a batch
# varies with the conversation), not a measurement.
KEPT_SHARE = 0.2
# Bounds of the expected remaining replies. At least one: the action is only
# worth pricing if a reply follows it. At most MAX_REMAINING: a guard against
# counters that overstate a session's age, not a forecast; a fold that costs
# less than MAX_REMAINING / 10 cache reads of what it removes pays.
MIN_REMAINING = 1
MAX_REMAINING = 200

Action = Literal["fold", "wait"]


@dataclass(frozen=True)
class Costs:
    """What one action costs and saves over the remaining replies, in base-input tokens."""

    call: float  # its own model call (input and answer), times the expected attempts
    write: float  # the cache write of everything after the first changed block
    saved: float  # the cache reads it saves over the remaining replies

    @property
    def net(self) -> float:
        """What the action saves less what it costs: positive, it pays."""
        return self.saved - self.call - self.write

    def describe(self) -> str:
        return (f"call {self.call:.0f} + write {self.write:.0f} vs "
                f"{self.saved:.0f} saved")


@dataclass(frozen=True)
class Choice:
    """What the policy does now, why, and the priced alternatives."""

    action: Action
    reason: str
    remaining_replies: int
    fold: Costs


def remaining_replies(replies_so_far: int) -> int:
    """Expected replies a session has left: as many as it has had, bounded
    (MIN_REMAINING, MAX_REMAINING). A session seen at some age is, with nothing
    else known, as likely to be in its first half as its second, so its age is the
    median of what it has left; a long chat is expected to go on, a young agent
    run to end soon."""
    return max(MIN_REMAINING, min(MAX_REMAINING, replies_so_far))


def price(*, removed_tokens: int, call_tokens: int, rewritten_tokens: int,
          remaining: int, expected_attempts: float, answer_tokens: int = 0,
          prices: Prices = DEFAULT_PRICES) -> Costs:
    """The :class:`Costs` of an action that removes ``removed_tokens`` from every
    later prompt, sends ``call_tokens`` to the summarizer and gets ``answer_tokens``
    back in each of its ``expected_attempts`` (no tokens: no call), and makes the
    next reply write ``rewritten_tokens`` to the cache again, at ``prices``."""
    if expected_attempts < 1 and (call_tokens or answer_tokens):
        raise ValueError(f"expected_attempts must be at least 1, got {expected_attempts}")
    call = (call_tokens * prices.call_input + answer_tokens * prices.call_output)
    return Costs(call=call * expected_attempts, write=prices.write * rewritten_tokens,
                 saved=prices.read * max(0, removed_tokens) * remaining)


def answer_tokens(batch_tokens: int, summary_tokens: int) -> int:
    """Tokens a fold's answer is expected to hold: the new summary, the previous one
    with KEPT_SHARE of the batch added (details and facts included)."""
    return summary_tokens + round(batch_tokens * KEPT_SHARE)


def choose(*, batch_tokens: int, summary_tokens: int, rewritten_tokens: int,
           replies_so_far: int, over_capacity: bool = False,
           expected_attempts: float = EXPECTED_ATTEMPTS,
           prices: Prices = DEFAULT_PRICES) -> Choice:
    """Fold or wait, for a fold that would condense ``batch_tokens`` with a previous
    summary of ``summary_tokens``, after which the next reply writes
    ``rewritten_tokens`` again (summary, memories, verbatim window). The expected
    remaining replies follow ``replies_so_far`` (:func:`remaining_replies`).
    ``over_capacity``: the context must shrink now, so fold. ``prices``: the
    session's reply model's and the summarizer's (:func:`price`).

    Raises ValueError for ``expected_attempts`` below 1.
    """
    remaining = remaining_replies(replies_so_far)
    fold = price(removed_tokens=round(batch_tokens * (1 - KEPT_SHARE)),
                 call_tokens=batch_tokens + summary_tokens + PROMPT_TOKENS,
                 answer_tokens=answer_tokens(batch_tokens, summary_tokens),
                 rewritten_tokens=rewritten_tokens, remaining=remaining,
                 expected_attempts=expected_attempts, prices=prices)
    over = f"over {remaining} replies: fold {fold.describe()}"
    if over_capacity:
        return Choice("fold", f"the context must fit its budget, so fold ({over})",
                      remaining, fold)
    if fold.net <= 0:
        return Choice("wait", f"the cached prefix is cheaper to keep ({over})", remaining, fold)
    return Choice("fold", f"a fold pays ({over})", remaining, fold)
