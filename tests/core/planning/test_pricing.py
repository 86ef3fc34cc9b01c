"""A fold priced against a warm cache: what it costs (its call, the cache write) and
what it saves (cache reads over the remaining replies), and that the policy waits
while keeping the cached prefix is cheaper, except where the capacity rule folds."""

from __future__ import annotations

from typing import Any

import pytest

from recap.core.planning.adaptive import replies_so_far, sizing
from recap.core.planning.clearing import clearing_pays
from recap.core.planning.outlook import outlook
from recap.core.planning.policy import MessageInfo, Thresholds, might_trigger, plan
from recap.core.planning.prices import DEFAULT_PRICES, prices_for, with_read
from recap.core.planning.pricing import (
    EXPECTED_ATTEMPTS,
    KEPT_SHARE,
    MAX_REMAINING,
    PROMPT_TOKENS,
    choose,
    price,
    remaining_replies,
)

pytestmark = pytest.mark.unit

BUDGET = 100_000
# Replies by a Sonnet-class model (cache reads 0.1x), summarized by a Haiku-class one
# (a third of its input price): the shape of the default deployment.
CHEAP = prices_for("claude-sonnet-4-5", "claude-haiku-4-5")
T = Thresholds(trigger_messages=30, trigger_tokens=15000, batch_size=20, keep_recent=10,
               context_budget_tokens=BUDGET, adaptive=True, memory_limit=2000, prices=CHEAP)


def agent_run(results: int, tokens: int = 2000) -> list[MessageInfo]:
    """An agent run: each reply a tool call and a tool result of ``tokens``."""
    out: list[MessageInfo] = []
    for i in range(results):
        call = f"t{i}"
        out.append(MessageInfo(2 * i + 1, "assistant", 40, calls=(call,)))
        out.append(MessageInfo(2 * i + 2, "user", tokens, answers=(call,)))
    return out


def chat(replies: int, tokens: int = 60) -> list[MessageInfo]:
    return [MessageInfo(i + 1, "assistant" if i % 2 else "user", tokens)
            for i in range(2 * replies)]


def test_the_costs_add_up() -> None:
    c = choose(batch_tokens=30_000, summary_tokens=600, rewritten_tokens=3100,
               replies_so_far=10, expected_attempts=1.2)
    answer = 600 + 30_000 * KEPT_SHARE  # the new summary: the old one and the kept share
    assert c.fold.call == pytest.approx(((30_000 + 600 + PROMPT_TOKENS) + 5 * answer) * 1.2)
    assert c.fold.write == pytest.approx(DEFAULT_PRICES.write * 3100)
    assert c.fold.saved == pytest.approx(DEFAULT_PRICES.read * 30_000 * (1 - KEPT_SHARE) * 10)
    assert c.fold.net == pytest.approx(c.fold.saved - c.fold.call - c.fold.write)
    assert c.remaining_replies == 10


def test_warm_agent_session_with_few_replies_left_waits() -> None:
    c = choose(batch_tokens=30_000, summary_tokens=600, rewritten_tokens=3100,
               replies_so_far=10)
    assert c.action == "wait" and c.fold.net < 0
    assert c.reason.startswith("the cached prefix is cheaper to keep (over 10 replies: fold call")
    # Through the policy: past its high-water mark, the run keeps its prefix, and
    # the hook's check (counters only) agrees with the plan.
    # The reply model summarizing (DEFAULT_PRICES, the pure default).
    own = Thresholds(**{**T.__dict__, "prices": DEFAULT_PRICES})
    run = agent_run(12)
    active = sum(m.token_count for m in run)
    s = sizing(message_count=len(run), active_tokens=active, summary_tokens=0, budget=BUDGET,
               keep_recent=10, memory_limit=2000)
    assert active > s.high_water and s.choice is not None and s.choice.action == "wait"
    assert s.fold_at > active
    assert not plan(run, summary_tokens=0, t=own).should_summarize
    assert not might_trigger(message_count=len(run), active_tokens=active, summary_tokens=0, t=own)
    o = outlook(run, summary_tokens=0, t=own)
    assert o.state == "below-high-water" and "the cached prefix is cheaper to keep" in o.why
    assert o.trigger.startswith("a fold paying for itself (")


def test_long_chat_with_many_replies_left_folds() -> None:
    c = choose(batch_tokens=3500, summary_tokens=600, rewritten_tokens=2000,
               replies_so_far=40, prices=CHEAP)
    assert c.action == "fold" and c.fold.net > 0 and c.reason.startswith("a fold pays")
    talk = chat(45)
    p = plan(talk, summary_tokens=0, t=T)
    assert p.should_summarize and p.mode == "normal" and "a fold pays" in p.reason
    assert might_trigger(message_count=len(talk), active_tokens=sum(m.token_count for m in talk),
                         summary_tokens=0, t=T)


def test_capacity_always_wins() -> None:
    # However dear the fold, a context that must shrink is folded.
    c = choose(batch_tokens=60_000, summary_tokens=900, rewritten_tokens=4000,
               replies_so_far=1, over_capacity=True, expected_attempts=10.0)
    assert c.action == "fold" and c.fold.net < 0
    assert c.reason.startswith("the context must fit its budget")
    # Through the policy: an agent run that would wait folds at the capacity rule.
    run = agent_run(45)
    active = sum(m.token_count for m in run)
    assert active >= 0.8 * BUDGET
    p = plan(run, summary_tokens=0, t=T)
    assert p.should_summarize and p.mode == "capacity"
    # Below 80% but within two replies' growth of it, a fold the sums say to skip
    # (a model that needs ten attempts) is made all the same.
    near, dear = agent_run(38), Thresholds(**{**T.__dict__, "expected_attempts": 10.0})
    active = sum(m.token_count for m in near)
    assert active < 0.8 * BUDGET
    s = sizing(message_count=len(near), active_tokens=active, summary_tokens=0, budget=BUDGET,
               keep_recent=10, memory_limit=2000, expected_attempts=10.0)
    assert s.choice is not None and s.choice.action == "fold" and s.choice.fold.net < 0
    assert s.choice.reason.startswith("the context must fit its budget")
    p = plan(near, summary_tokens=0, t=dear)
    assert p.should_summarize and "the context must fit its budget" in p.reason
    assert might_trigger(message_count=len(near), active_tokens=active, summary_tokens=0, t=dear)


@pytest.mark.parametrize(("batch", "replies"), [(30_000, 10), (3500, 40), (8000, 25)])
def test_monotonic_in_expected_attempts(batch: int, replies: int) -> None:
    choices = [choose(batch_tokens=batch, summary_tokens=600, rewritten_tokens=2500,
                      replies_so_far=replies, expected_attempts=a)
               for a in (1.0, 1.2, 1.5, 2.0, 3.0, 5.0)]
    nets = [c.fold.net for c in choices]
    assert nets == sorted(nets, reverse=True)
    waited = [c.action == "wait" for c in choices]
    assert waited == sorted(waited)  # once it waits, more attempts never make it fold
    # And through the policy's thresholds: more attempts never lower the fold mark.
    marks = [sizing(message_count=2 * replies, active_tokens=batch + 1500, summary_tokens=600,
                    budget=BUDGET, keep_recent=10, memory_limit=2000,
                    expected_attempts=a).fold_at for a in (1.0, 1.5, 3.0, 6.0)]
    assert marks == sorted(marks)


def test_expected_attempts_from_the_thresholds() -> None:
    talk = chat(45)
    assert plan(talk, summary_tokens=0, t=T).should_summarize
    # A model that needs many resends makes the same fold not worth its calls.
    dear = Thresholds(**{**T.__dict__, "expected_attempts": 6.0})
    assert not plan(talk, summary_tokens=0, t=dear).should_summarize
    assert EXPECTED_ATTEMPTS >= 1
    with pytest.raises(ValueError, match="expected_attempts must be at least 1, got 0.5"):
        choose(batch_tokens=3500, summary_tokens=600, rewritten_tokens=2000,
               replies_so_far=40, expected_attempts=0.5, prices=CHEAP)


def test_a_clear_is_priced_by_the_same_rule_with_no_call() -> None:
    # 24,000 tokens of tool output cleared, 8,000 written again, 10 replies left:
    # 2,400 read saved a reply for 10 replies against a 10,000 write.
    c = price(removed_tokens=24_000, call_tokens=0, rewritten_tokens=8000, remaining=10,
              expected_attempts=1)
    assert (c.call, c.write, c.saved) == (0, pytest.approx(DEFAULT_PRICES.write * 8000),
                                          pytest.approx(DEFAULT_PRICES.read * 24_000 * 10))
    assert clearing_pays(24_000, 8000, replies=10)
    # Too few replies left, or the next fold condenses them first: it does not pay.
    assert not clearing_pays(24_000, 8000, replies=10, until_fold=4)
    assert not clearing_pays(1000, 8000, replies=10)
    assert not clearing_pays(0, 0, replies=10)


def test_remaining_replies_are_bounded() -> None:
    assert remaining_replies(0) == 1
    assert remaining_replies(12) == 12
    assert remaining_replies(10_000) == MAX_REMAINING


def test_replies_so_far_count_a_fold_once_there_is_a_summary() -> None:
    # Two active messages a reply; a summary means a fold condensed at least one
    # depth of replies before them (a lower bound of the session's age).
    assert replies_so_far(20, 0, depth=8000, growth=1000) == 10
    assert replies_so_far(20, 900, depth=8000, growth=1000) == 18


def test_a_fold_that_pays_at_a_tenth_waits_when_reads_cost_a_fortieth() -> None:
    # The cheaper the cache read, the cheaper full history is to keep: the same fold.
    fold: dict[str, Any] = {"batch_tokens": 3500, "summary_tokens": 600, "rewritten_tokens": 2000,
            "replies_so_far": 40}
    actions = [choose(**fold, prices=with_read(CHEAP, r)).action for r in (0.1, 0.05, 0.025)]
    assert actions == ["fold", "wait", "wait"]
    assert choose(**fold, prices=with_read(CHEAP, 0.025)).reason.startswith(
        "the cached prefix is cheaper to keep")
    # Through the policy: the chat that folds at 0.1x waits at 0.025x.
    talk = chat(45)
    assert plan(talk, summary_tokens=0, t=T).should_summarize
    fortieth = Thresholds(**{**T.__dict__, "prices": with_read(CHEAP, 0.025)})
    assert not plan(talk, summary_tokens=0, t=fortieth).should_summarize
    # And clearing: what pays at 0.1x does not at 0.025x.
    assert clearing_pays(24_000, 8000, replies=10, prices=CHEAP)
    assert not clearing_pays(24_000, 8000, replies=10, prices=with_read(CHEAP, 0.025))


def test_the_fold_call_is_priced_at_the_summarizers_rates() -> None:
    # The reply model summarizing its own history costs it the fold; a summarizer
    # at a fraction of its price makes the same fold pay.
    fold: dict[str, Any] = {"batch_tokens": 3500, "summary_tokens": 600, "rewritten_tokens": 2000,
            "replies_so_far": 40}
    own = choose(**fold, prices=prices_for("claude-sonnet-4-5", "claude-sonnet-4-5"))
    cheap = choose(**fold, prices=CHEAP)
    assert (own.action, cheap.action) == ("wait", "fold")
    assert own.fold.call == pytest.approx(3 * cheap.fold.call)
    assert own.fold.write == cheap.fold.write and own.fold.saved == cheap.fold.saved
    # The answer is output: five times input on every listed model.
    answer = price(removed_tokens=0, call_tokens=0, answer_tokens=1000, rewritten_tokens=0,
                   remaining=1, expected_attempts=1, prices=CHEAP)
    assert answer.call == pytest.approx(1000 * 5 / 3)


def test_a_one_hour_cache_writes_dearer() -> None:
    hour = prices_for("claude-sonnet-4-5", "claude-haiku-4-5", ttl="1h")
    assert (CHEAP.write, hour.write) == (pytest.approx(1.25), pytest.approx(2.0))
    fold: dict[str, Any] = {"batch_tokens": 3500, "summary_tokens": 600, "rewritten_tokens": 2000,
            "replies_so_far": 40}
    assert choose(**fold, prices=hour).fold.write == pytest.approx(2 * 2000)
