"""The adaptive policy as tables: what it decides for a session's counters, and that
the hook's check, the plan and the outlook agree on it."""

from __future__ import annotations

import random
import re

import pytest

from recap.core.planning.adaptive import (
    CHAT_TOKENS,
    MIN_KEEP,
    RECALL_COVER,
    Sizing,
    memory_budget,
    net_read_rate,
    repairs,
    sizing,
)
from recap.core.planning.outlook import outlook
from recap.core.planning.policy import MessageInfo, Thresholds, might_trigger, plan
from recap.core.planning.prices import DEFAULT_PRICES
from recap.errors import ConfigError
from recap.settings import load_settings
from tests.core.planning.test_policy_replay import Fold, replay

pytestmark = pytest.mark.unit

T = Thresholds(trigger_messages=30, trigger_tokens=15000, batch_size=20, keep_recent=10,
               context_budget_tokens=32000, adaptive=True, memory_limit=2000)


def size(n: int, tokens: int, summary: int = 0) -> Sizing:
    return sizing(message_count=n, active_tokens=n * tokens, summary_tokens=summary,
                  budget=32000, keep_recent=10, memory_limit=2000)


@pytest.mark.parametrize(("tokens", "summary", "keep", "high", "low", "memories"), [
    (60, 0, 8, 4595, 1080, 500),        # short turns: a small, cheap fold often
    (60, 900, 8, 8849, 1380, 7200),     # a longer session: its summary raises the mark
    (400, 0, 1, 9899, 1000, 500),       # longer turns: keep the newest, fold deeper
    (1500, 0, 1, 19599, 2100, 500),     # pasted blocks: fold much deeper
    (6000, 1000, 1, 8500, 4250, 2000),  # tool results: room for two replies below 80%
])
def test_sizing_table(tokens: int, summary: int, keep: int, high: int, low: int,
                      memories: int) -> None:
    s = size(40, tokens, summary)
    assert (s.keep_recent, s.high_water, s.low_water, s.memory_budget) == (
        keep, high, low, memories)
    assert s.growth == 2 * tokens
    assert f"fold past {high} tokens down to {low}" in s.reason


def test_what_a_fold_loses_is_priced() -> None:
    # A lost token costs what keeping it would (a cache read) on the share later
    # replies cannot reach: with no recall a fold never pays for cache reads alone.
    assert net_read_rate(0.0) == 0 and net_read_rate(1.0) == DEFAULT_PRICES.read
    assert 0 < net_read_rate(RECALL_COVER) < DEFAULT_PRICES.read

    def high(tokens: int, cover: float, summary: int = 0) -> int:
        return sizing(message_count=40, active_tokens=40 * tokens, summary_tokens=summary,
                      budget=32000, keep_recent=10, memory_limit=2000,
                      recall_cover=cover).high_water

    # A chat that fits its budget with room to spare: without recall it is folded
    # only near the capacity rule, not a few thousand tokens in to save reads.
    ceiling = 25599 - 2 * 120
    assert high(60, 0.0) == high(60, 0.0, summary=900) == ceiling
    assert "no recall" in sizing(message_count=40, active_tokens=2400, summary_tokens=0,
                                 budget=32000, keep_recent=10, memory_limit=2000,
                                 recall_cover=0.0).reason
    # Recall makes the loss smaller: folds come, deeper the more it leaves unreachable.
    assert high(60, 1.0) < high(60, RECALL_COVER) < high(60, 0.0)
    assert high(400, 1.0) < high(400, RECALL_COVER) < high(400, 0.0)
    # Tool results fill the budget fast: the capacity rule's room decides either way.
    assert high(6000, 0.0, 1000) == high(6000, 1.0, 1000)


def test_the_settings_give_the_cover_of_recall() -> None:
    assert load_settings().thresholds().recall_cover == RECALL_COVER
    assert load_settings(archive_summarized=False).thresholds().recall_cover == 0
    assert load_settings(recall_tokens=0).thresholds().recall_cover == 0


def test_keep_window_never_below_the_minimum_nor_above_the_setting() -> None:
    assert size(40, 20_000).keep_recent == MIN_KEEP
    assert size(40, 5).keep_recent == 10


@pytest.mark.parametrize(("summary", "limit", "per_message", "expected"), [
    (0, 2000, 60, 500), (600, 2000, 60, 4800), (1024, 2000, 60, 8000), (1024, 1500, 60, 6000),
    (900, 0, 60, 0),
    # Pasted blocks, tool results: their specifics are few per token; at most the limit.
    (100, 2000, 400, 800), (1024, 2000, 400, 2000), (1024, 2000, CHAT_TOKENS + 1, 2000),
    (1024, 2000, CHAT_TOKENS, 8000),
])
def test_memories_block_grows_with_what_was_condensed(summary: int, limit: int,
                                                      per_message: int, expected: int) -> None:
    assert memory_budget(summary, limit=limit, per_message=per_message) == expected


def test_the_repair_call_only_in_a_chat() -> None:
    # A chat's specifics read best in the summary's prose; pasted blocks and tool
    # results have theirs placed by the guard, without a second full-price call.
    assert repairs(20) and repairs(CHAT_TOKENS)
    assert not repairs(CHAT_TOKENS + 1) and not repairs(5000)


def conversation(user: int, answer: int, n: int = 600) -> list[MessageInfo]:
    rng = random.Random(7)
    return [MessageInfo(i + 1, "assistant" if i % 2 else "user",
                        max(1, int((answer if i % 2 else user) * rng.uniform(0.5, 1.5))))
            for i in range(n)]


def tokens_of(script: list[MessageInfo]) -> int:
    return sum(m.token_count for m in script)


def per_fold(folds: list[Fold], script: list[MessageInfo]) -> float:
    return tokens_of(script) / len(folds)


def test_high_volume_user_gets_a_higher_threshold_and_fewer_deeper_folds() -> None:
    ordinary = conversation(40, 120)
    heavy = conversation(600, 1400)  # pasted logs and long answers, many turns
    light_folds, heavy_folds = replay(ordinary, T), replay(heavy, T)
    assert light_folds and heavy_folds
    # Deeper: more messages' tokens per fold, so fewer folds for the same volume.
    assert per_fold(heavy_folds, heavy) > 2 * per_fold(light_folds, ordinary)
    assert size(40, 1000).high_water > size(40, 80).high_water


def test_adaptive_folds_short_turns_long_before_the_fixed_rule() -> None:
    chat = conversation(40, 120)
    fixed = replay(chat, Thresholds(trigger_messages=30, trigger_tokens=15000, batch_size=20,
                                    keep_recent=10, context_budget_tokens=32000))
    folds = replay(chat, T)
    assert {mode for _, mode, *_ in fixed} == {"capacity"}  # never the normal rule
    assert {mode for _, mode, *_ in folds} == {"normal"}
    assert folds[0][0] < fixed[0][0]


@pytest.mark.parametrize("seed", range(30))
def test_hook_check_never_misses_what_the_plan_would_fold(seed: int) -> None:
    rng = random.Random(seed)
    messages = [MessageInfo(i, "user" if i % 2 else "assistant", rng.choice([20, 300, 4000]))
                for i in range(1, rng.randint(1, 60))]
    summary = rng.choice([0, 500, 1000])
    p = plan(messages, summary_tokens=summary, t=T)
    check = might_trigger(message_count=len(messages),
                          active_tokens=sum(m.token_count for m in messages),
                          summary_tokens=summary, t=T, normal_blocked=True)
    assert check or not p.should_summarize
    if check and p.should_summarize:
        assert p.reason.startswith(("adaptive:", "capacity:", "aggressive:"))


def test_plan_and_outlook_say_why() -> None:
    short = [MessageInfo(i, "user" if i % 2 else "assistant", 60) for i in range(1, 41)]
    o = outlook(short, summary_tokens=0, t=T)
    assert o.state == "below-high-water"
    assert o.why.startswith("below the high-water mark: about 120 tokens a reply")
    assert "the context passing the high-water mark of 4595 tokens (2196 more" in o.trigger
    grown = short + [MessageInfo(100 + i, "user", 60) for i in range(44)]
    p = plan(grown, summary_tokens=0, t=T)
    assert p.mode == "normal" and p.reason.startswith("adaptive: about")
    left = sum(m.token_count for m in grown if m.id not in set(p.batch_ids))
    assert left <= 1080  # down to the low-water mark
    assert outlook(grown, summary_tokens=0, t=T).state == "due"


def test_policy_setting() -> None:
    assert load_settings(policy="adaptive").thresholds().adaptive
    assert not load_settings(policy="threshold").thresholds().adaptive
    with pytest.raises(ConfigError, match=r"RECAP_POLICY: .*'adaptive' or 'threshold'.*"
                                          r"got 'sometimes'"):
        load_settings(policy="sometimes")


def test_a_session_past_its_mark_that_waits_says_so() -> None:
    # A large budget and 1000-token turns: past the high-water mark, yet the cached
    # prefix is cheaper to keep, so the session waits; the reason says where it is.
    t = Thresholds(trigger_messages=30, trigger_tokens=15000, batch_size=20, keep_recent=10,
                   context_budget_tokens=100_000, adaptive=True, memory_limit=2000)
    turns = [MessageInfo(i, "user" if i % 2 else "assistant", 1000) for i in range(1, 25)]
    p = plan(turns, summary_tokens=0, t=t)
    found = re.search(r"fold past (\d+) tokens", p.reason)
    assert found is not None
    mark = int(found.group(1))
    assert not p.should_summarize and 24_000 > mark
    assert p.reason.startswith("past the high-water mark, waiting: about 2000 tokens a reply")
    assert "past it, the cached prefix is cheaper to keep" in p.reason
    assert p.reason.endswith("; context 24000 tokens")
    below = plan(turns[:4], summary_tokens=0, t=t)
    assert below.reason.startswith("below the high-water mark: ")
