"""The adaptive policy (``RECAP_POLICY=adaptive``): when a session folds, how deep,
how many messages stay verbatim and how large its memories block is, derived from
the session's own counters and what Claude's prompt cache charges. Pure.

Cost model, in the reply model's base-input tokens, at the session's prices
(recap.core.planning.prices: the reply model's cache read ``r`` and write ``w``,
e.g. 0.1x and 1.25x; the summarizer's input ``c``): each reply reads the prefix
the previous reply cached and writes only what is new. Between folds the context
grows from a low-water mark ``L`` (summary, memories block, verbatim window) by
``g`` tokens per reply up to the high-water mark ``L + d``, so a reply reads about
``L + d/2`` at ``r``. A fold changes the summary near the start of the prompt: the
next reply writes ``L`` again at ``w``, and the fold reads its batch (about ``d``)
and the old summary ``S`` at ``c``, once every ``d / g`` replies. Per reply that is
``r (L + d/2) + (w L + c d + c S) g / d``, least at ``d = sqrt(2 g (w L + c S) / r)``:
sessions that grow fast (pasted logs, tool results) and long sessions (a bigger
summary) get a higher threshold and fewer, deeper folds; short turns fold small
and often enough to stay cheap; a cheaper cache read makes folds rarer and deeper.

What a fold loses is priced too. Every token it condenses leaves every later
request; keeping it would have cost a cache read (``r``) a reply, so a lost token
is priced at that, times the share of it later replies can no longer reach
(``1 - cover``: with the archive and reply-time recall on, RECALL_COVER of it is
still reachable; without them, none). A fold below the capacity rule then saves
``r cover`` a reply per condensed token, not ``r``, and the depth above uses that
rate (:func:`net_read_rate`). When it is not positive (no recall), a fold never
pays just to save cache reads: the session folds only when the capacity rule's
mark (less HEADROOM replies) is reached, and a conversation that fits its budget
with room to spare is never folded.

Past the high-water mark a fold is still priced before it is made
(:mod:`recap.core.planning.pricing`): its own call at the summarizer's prices and the
cache write it causes against the cache reads it saves over the replies the
session is expected to have left. The replies so far are estimated from the
active messages (two a reply) and, once there is a summary, one fold's depth
(:func:`replies_so_far`): a lower bound, so the estimate errs towards keeping the
cached prefix, which the capacity rule bounds.
When the fold does not pay, the session waits and its mark moves up to the
capacity rule's (less HEADROOM replies): a young agent run of large tool results
keeps its cached prefix, a long chat folds.

Only ``message_count``, ``active_tokens`` and ``summary_tokens`` go in, the
counters the hook reads, so the hook and the job reach the same decision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from recap.core.planning import pricing
from recap.core.planning.prices import DEFAULT_PRICES, Prices
from recap.core.planning.pricing import EXPECTED_ATTEMPTS, Choice

# Newest messages always kept verbatim, whatever their size: the newest turn. The
# one before it stays too when both fit the window (WINDOW_TOKENS); a large tool
# result or pasted block that was answered already goes to the summary with the
# next fold instead of being written to the cache again after it.
MIN_KEEP = 1
# Verbatim tokens the window aims at: the keep window is as many messages as fit
# (at least MIN_KEEP, at most RECAP_KEEP_RECENT). The summary and the memories
# carry the specifics of what is folded (the retention guard checks each fold).
WINDOW_TOKENS = 500
# Summary size assumed before the first fold, when the session has none yet.
SUMMARY_GUESS = 600
# Fewest tokens a fold condenses: below this, a fold's fixed costs (the rewrite of
# the prefix, the call's prompt) buy too little.
MIN_DEPTH = 1500
# The memories block: about this many tokens per summary token (the more the
# folds condensed, the more the memories hold), at most RECAP_MEMORY_BUDGET_TOKENS
# for a session of pasted blocks or tool results and MEMORIES_TIMES that for a chat
# (messages of at most CHAT_TOKENS on average). A chat's specifics (an amount, an
# id, a time) sit a few to a line, so its block carries many for little; a pasted
# block's stay in the summary's details and the memories hold its few new ones.
# Read from the cache at 0.1x, a bigger block also makes folds rarer and deeper.
MEMORIES_PER_SUMMARY = 8.0
MEMORIES_TIMES = 4
CHAT_TOKENS = 150
MIN_MEMORIES = 500
# Pasted blocks (logs, tables) over this many tokens go to the summarizer as an
# excerpt (RECAP_SUMMARIZE_BULK_TOKENS=-1, the default, under this policy).
BULK_TOKENS = 80
# Replies of growth the high-water mark leaves below the capacity rule.
HEADROOM = 2
# What a condensed token costs the conversation, a reply, is what keeping it would
# have cost (a cache read at the reply model's price): a fold is never paid for
# with the conversation's own words at less than what keeping them costs.
# Share of what a fold condenses that later replies still reach with the archive
# and reply-time recall on (RECAP_ARCHIVE_SUMMARIZED, RECAP_RECALL_TOKENS): the
# guard keeps the specifics the conversation used in the details section and the
# memories, and recall quotes archived lines a later turn names. A design value,
# not a measurement: half, so a fold below the capacity rule goes about 1.4x deeper
# and less often than cache reads alone would make it.
RECALL_COVER = 0.5


def per_message(tokens: int, messages: int) -> int:
    """Tokens per active message, rounded up (1 for a session without messages): the
    one measure of a session's kind of messages the policy's decisions read."""
    return max(1, math.ceil(tokens / messages)) if messages else 1


def is_chat(per_message: int) -> bool:
    """A chat: messages of at most CHAT_TOKENS on average (not pasted blocks or tool
    results)."""
    return per_message <= CHAT_TOKENS


def repairs(per_message: int) -> bool:
    """Whether a fold may make the retention guard's one repair call: in a chat,
    whose specifics the summary's prose carries best, yes; in a session of pasted
    blocks or tool results, no: the guard settles what the summary missed itself
    (details section, memories) instead of reading the whole summary again at full
    price."""
    return is_chat(per_message)


def replies_so_far(message_count: int, summary_tokens: int, *, depth: int,
                   growth: int) -> int:
    """A lower bound of the replies a session has had, from its counters: two active
    messages a reply, and, once it has a summary, at least one fold's depth of
    replies before them (the fold that wrote the summary condensed that much)."""
    folded = depth // max(1, growth) if summary_tokens else 0
    return message_count // 2 + folded


@dataclass(frozen=True)
class Sizing:
    """What the adaptive policy decided for one session, and why."""

    high_water: int  # fold when summary + active tokens pass this
    low_water: int  # a fold condenses until summary + active tokens fit this
    keep_recent: int  # newest messages a fold never takes
    memory_budget: int  # tokens of the memories block
    growth: int  # tokens a reply (a user turn and its answer) adds, estimated
    reason: str
    # The priced choice once the context is past high_water (None below it).
    choice: Choice | None = None
    # Where the session folds: high_water, or the capacity rule's mark (less
    # HEADROOM replies) while the priced choice is to wait.
    fold_at: int = 0


def lowest_high_water(budget: int) -> int:
    """No session's high-water mark is below this (the sweeper's SQL pre-filter)."""
    return min(SUMMARY_GUESS + MIN_DEPTH, math.ceil(0.8 * budget) - 1)


def memory_budget(summary_tokens: int, *, limit: int, per_message: int) -> int:
    """Tokens of the memories block for a session whose summary has ``summary_tokens``
    and whose active messages hold ``per_message`` tokens on average: it grows with
    what the folds condensed, up to ``limit`` (RECAP_MEMORY_BUDGET_TOKENS; 0: off),
    MEMORIES_TIMES that for a chat. Changes with the summary and with the session's
    kind of messages, not with every reply, so the block stays in the cached prefix."""
    if limit <= 0:
        return 0
    wanted = max(MIN_MEMORIES, int(MEMORIES_PER_SUMMARY * summary_tokens))
    times = MEMORIES_TIMES if is_chat(per_message) else 1
    return min(times * limit, wanted)


def net_read_rate(cover: float, *, prices: Prices = DEFAULT_PRICES) -> float:
    """What a fold saves a reply per condensed token, in the reply model's base
    input: its cache read less the price of losing it (the same cache read) on the
    share later replies can no longer reach (``1 - cover``). Not positive: a fold
    does not pay for itself in cache reads."""
    return prices.read - prices.read * (1 - min(1.0, max(0.0, cover)))


def best_depth(*, growth: int, low_water: int, summary_tokens: int,
               rate: float | None = None, prices: Prices = DEFAULT_PRICES) -> int:
    """Tokens between folds that make a reply cheapest (module docstring), when a
    condensed token saves ``rate`` a reply (:func:`net_read_rate`; positive; default
    the reply model's cache read), at ``prices`` (the fold's call reads the batch
    and the summary at the summarizer's input price)."""
    per_read = prices.read if rate is None else rate
    fixed = prices.write * low_water + prices.call_input * summary_tokens
    return int(math.sqrt(2 * growth * fixed / per_read))


def sizing(*, message_count: int, active_tokens: int, summary_tokens: int,
           budget: int, keep_recent: int, memory_limit: int,
           recall_cover: float = RECALL_COVER,
           expected_attempts: float = EXPECTED_ATTEMPTS,
           prices: Prices = DEFAULT_PRICES) -> Sizing:
    """The adaptive decision for a session's counters.

    ``budget`` is the context budget; the high-water mark stays below 80% of it (the
    capacity rule). ``keep_recent`` caps the window; ``memory_limit`` is
    RECAP_MEMORY_BUDGET_TOKENS (:func:`memory_budget`); ``recall_cover`` the share
    of what a fold condenses that later replies still reach (RECALL_COVER with the
    archive and recall on, else 0): what a fold loses is priced by it
    (:func:`net_read_rate`). ``expected_attempts``: the attempts a fold call takes
    (:func:`recap.core.planning.pricing.choose`); ``prices``: the reply model's
    and the summarizer's.
    """
    size = per_message(active_tokens, message_count)
    growth = 2 * size
    keep = max(1, min(keep_recent, max(MIN_KEEP, WINDOW_TOKENS // size)))
    window = keep * size
    summary = max(summary_tokens, SUMMARY_GUESS)
    memories = memory_budget(summary_tokens, limit=memory_limit, per_message=size)
    prompt = summary + memories + window  # what every reply after a fold re-reads
    rate = net_read_rate(recall_cover, prices=prices)
    low = summary + window
    ceiling = math.ceil(0.8 * budget) - 1
    # Room for HEADROOM replies' growth below the capacity rule: a session that adds
    # thousands of tokens a reply (tool results) folds before the next replies would
    # push it over the budget, where the context is cut and the cached prefix lost.
    ceiling = max(min(ceiling, low + MIN_DEPTH), ceiling - HEADROOM * growth)
    if rate > 0:
        depth = max(MIN_DEPTH, 2 * growth, best_depth(growth=growth, low_water=prompt,
                                                      summary_tokens=summary, rate=rate,
                                                      prices=prices))
        high = min(low + depth, ceiling)
    else:  # a fold would lose more than the cache reads it saves
        high = ceiling
    low = min(low, high // 2)
    reason = (f"about {growth} tokens a reply ({message_count} messages, {active_tokens} "
              f"tokens); keep {keep} verbatim, memories {memories}: fold past "
              f"{high} tokens down to {low}")
    if rate <= 0:
        reason += (" (no recall: a fold would lose more than the cache reads it saves, so "
                   f"only room for {HEADROOM} replies below the capacity rule makes one)")
    elif high == ceiling:
        reason += f" (capped: room for {HEADROOM} replies below the capacity rule)"
    context = summary_tokens + active_tokens
    if context <= high:
        return Sizing(high, low, keep, memories, growth, reason, None, high)
    choice = pricing.choose(batch_tokens=context - low, summary_tokens=summary_tokens,
                            rewritten_tokens=low + memories,
                            replies_so_far=replies_so_far(message_count, summary_tokens,
                                                          depth=high - low, growth=growth),
                            over_capacity=context > ceiling,
                            expected_attempts=expected_attempts, prices=prices)
    fold_at = high if choice.action == "fold" else max(high, ceiling)
    return Sizing(high, low, keep, memories, growth, f"{reason}; past it, {choice.reason}",
                  choice, fold_at)
