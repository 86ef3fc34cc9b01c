"""The policy as tables: token_counter is len-like (token_count given directly)."""

from __future__ import annotations

from collections.abc import Set as AbstractSet

import pytest

from recap.core.planning.policy import MessageInfo, Thresholds, might_trigger, plan, retry_delay

pytestmark = pytest.mark.unit

T = Thresholds(trigger_messages=30, trigger_tokens=15000, batch_size=20, keep_recent=10,
               context_budget_tokens=32000)


def msgs(n: int, tokens: int = 100, *, pinned: AbstractSet[int] = frozenset(),
         roles: dict[int, str] | None = None) -> list[MessageInfo]:
    roles = roles or {}
    return [MessageInfo(i, roles.get(i, "user" if i % 2 else "assistant"), tokens, i in pinned)
            for i in range(1, n + 1)]


@pytest.mark.parametrize(("n", "tokens", "expected_mode"), [
    (30, 800, "none"),        # count exactly at the threshold: no
    (31, 750, "none"),        # batch tokens 20*750 = 15000, exactly at threshold: no
    (31, 751, "normal"),      # both strictly above
    (31, 100, "none"),        # many messages, small batch
    (20, 800, "none"),        # few messages, 16000 tokens = 50%
])
def test_normal_trigger_boundaries(n: int, tokens: int, expected_mode: str) -> None:
    p = plan(msgs(n, tokens), summary_tokens=0, t=T)
    assert p.mode == expected_mode
    if expected_mode == "normal":
        assert p.batch_ids == tuple(range(1, 21))


@pytest.mark.parametrize(("summary", "active_each", "n", "mode"), [
    (0, 1279, 20, "none"),          # 25580 tokens = 79.9%
    (0, 1280, 20, "capacity"),      # 25600 = 80%
    (600, 1270, 20, "capacity"),    # summary counts: 26000 = 81%
    (0, 1520, 20, "capacity"),      # 30400 = 95.0%: not above 95
    (0, 1521, 20, "aggressive"),    # 95.06%
])
def test_capacity_levels(summary: int, active_each: int, n: int, mode: str) -> None:
    p = plan(msgs(n, active_each), summary_tokens=summary, t=T)
    assert p.mode == mode


def test_capacity_takes_normal_batch_outside_keep_window() -> None:
    p = plan(msgs(25, 1100), summary_tokens=0, t=T)  # 27500 = 86%
    assert p.mode == "capacity"
    assert p.batch_ids == tuple(range(1, 16))  # 25 - keep 10 = 15 candidates < batch 20


def test_aggressive_keeps_newest_five_and_pinned() -> None:
    p = plan(msgs(40, 800, pinned={3, 7}), summary_tokens=0, t=T)  # 100%
    assert p.mode == "aggressive"
    assert p.batch_ids == tuple(i for i in range(1, 36) if i not in (3, 7))
    assert not p.needs_escalation


def test_escalation_when_the_kept_part_alone_exceeds_budget() -> None:
    big = [MessageInfo(i, "user", 7000) for i in range(1, 8)]  # newest 5 = 35000 > 32000
    p = plan(big, summary_tokens=0, t=T)
    assert p.mode == "aggressive"
    assert p.needs_escalation
    assert "needs escalation" in p.reason
    assert p.batch_ids == (1, 2)


def test_escalation_with_nothing_to_condense_is_still_flagged() -> None:
    p = plan([MessageInfo(1, "user", 40000, pinned=True)], summary_tokens=0, t=T)
    assert p.needs_escalation and not p.should_summarize


def test_pinned_never_in_batch_and_batch_fills_past_them() -> None:
    t = Thresholds(30, 15000, 20, 10, 100000)
    p = plan(msgs(31, 850, pinned={1, 2, 5}), summary_tokens=0, t=t)
    assert p.mode == "normal"
    assert not {1, 2, 5} & set(p.batch_ids)
    assert len(p.batch_ids) == 18  # 21 candidates outside keep, 3 pinned


def test_keep_window_is_respected() -> None:
    t = Thresholds(5, 10, 100, 4, 100000)
    p = plan(msgs(10, 50), summary_tokens=0, t=t)
    assert p.batch_ids == (1, 2, 3, 4, 5, 6)


def test_tool_results_stay_with_their_call_at_batch_end() -> None:
    t = Thresholds(5, 10, 4, 2, 100000)
    roles = {1: "user", 2: "assistant", 3: "user", 4: "assistant", 5: "tool", 6: "tool",
             7: "assistant", 8: "user", 9: "assistant", 10: "user"}
    p = plan(msgs(10, 50, roles=roles), summary_tokens=0, t=t)
    # 4 (assistant) + 5, 6 (tool) is one unit; batch of 4 cannot take it whole.
    assert p.batch_ids == (1, 2, 3)


def test_tool_unit_straddling_keep_window_is_kept() -> None:
    t = Thresholds(3, 10, 50, 2, 100000)
    roles = {1: "user", 2: "assistant", 3: "user", 4: "assistant", 5: "tool", 6: "user"}
    p = plan(msgs(6, 50, roles=roles), summary_tokens=0, t=t)
    # keep window = {5, 6}; 4 calls 5, so 4 stays too.
    assert p.batch_ids == (1, 2, 3)


def test_pinned_tool_result_pins_its_call() -> None:
    t = Thresholds(3, 10, 50, 1, 100000)
    roles = {1: "user", 2: "assistant", 3: "tool", 4: "user", 5: "assistant"}
    p = plan(msgs(5, 50, pinned={3}, roles=roles), summary_tokens=0, t=t)
    assert p.batch_ids == (1, 4)


def test_oversized_first_unit_is_taken_whole_to_make_progress() -> None:
    t = Thresholds(3, 10, 2, 1, 100000)
    roles = {1: "assistant", 2: "tool", 3: "tool", 4: "user", 5: "assistant"}
    p = plan(msgs(5, 50, roles=roles), summary_tokens=0, t=t)
    assert p.batch_ids == (1, 2, 3)


def test_might_trigger_is_never_false_when_plan_triggers() -> None:
    import random

    rng = random.Random(7)
    for _ in range(2000):
        n = rng.randint(0, 60)
        ms = [MessageInfo(i, rng.choice(["user", "assistant", "tool"]),
                          rng.randint(0, 2500), rng.random() < 0.1) for i in range(n)]
        summary = rng.randint(0, 3000)
        p = plan(ms, summary_tokens=summary, t=T)
        if p.should_summarize:
            assert might_trigger(message_count=n, active_tokens=sum(m.token_count for m in ms),
                                 summary_tokens=summary, t=T)


@pytest.mark.parametrize(("retries", "after", "rand", "expected"), [
    (0, None, 0.5, 2.5),
    (3, None, 1.0, 40.0),
    (10, None, 1.0, 300.0),   # capped
    (0, 30.0, 0.1, 30.0),     # retry-after is a floor
    (0, 9999.0, 0.1, 300.0),  # but capped too
])
def test_retry_delay(retries: int, after: float | None, rand: float, expected: float) -> None:
    assert retry_delay(retries, retry_after=after, base=5.0, cap=300.0, rand=rand) == expected


def test_batch_token_cap_leaves_the_rest_for_a_follow_up() -> None:
    t = Thresholds(5, 10, 100, 2, 1000, max_batch_tokens=250)
    p = plan(msgs(40, 100), summary_tokens=0, t=t)  # aggressive
    assert p.mode == "aggressive" and p.batch_ids == (1, 2)


def test_batch_token_cap_still_takes_one_oversized_message() -> None:
    t = Thresholds(1, 10, 100, 1, 100000, max_batch_tokens=50)
    p = plan([MessageInfo(1, "user", 900), MessageInfo(2, "user", 5)], summary_tokens=0, t=t)
    assert p.batch_ids == (1,)


def test_full_batch_under_the_token_trigger_blocks_the_normal_rule() -> None:
    p = plan(msgs(40, 100), summary_tokens=0, t=T)  # batch of 20 x 100 <= 15000, 12%
    assert p.mode == "none" and p.normal_blocked
    assert not might_trigger(message_count=40, active_tokens=16000, summary_tokens=0, t=T,
                             normal_blocked=True)
    assert might_trigger(message_count=40, active_tokens=26000, summary_tokens=0, t=T,
                         normal_blocked=True)  # capacity still counts


def test_a_batch_that_can_still_grow_does_not_block() -> None:
    p = plan(msgs(25, 100), summary_tokens=0, t=T)  # 15 candidates < batch 20
    assert p.mode == "none" and not p.normal_blocked


# -- force and outlook (recap summarize --force; why a session is not summarized yet) --

def test_force_condenses_the_candidate_batch_when_no_rule_fires() -> None:
    p = plan(msgs(40, 100), summary_tokens=0, t=T)
    forced = plan(msgs(40, 100), summary_tokens=0, t=T, force=True)
    assert not p.should_summarize
    assert forced.mode == "forced" and forced.batch_ids == tuple(range(1, 21))
    assert forced.reason == "forced: " + p.reason
    assert forced.batch_tokens == 2000
    assert forced.normal_blocked == p.normal_blocked  # what is left is judged the same way


@pytest.mark.parametrize(("n", "tokens", "mode"), [(31, 751, "normal"), (20, 1280, "capacity"),
                                                   (20, 1521, "aggressive")])
def test_force_leaves_a_rule_that_fires_alone(n: int, tokens: int, mode: str) -> None:
    assert plan(msgs(n, tokens), summary_tokens=0, t=T, force=True) == \
        plan(msgs(n, tokens), summary_tokens=0, t=T)
    assert plan(msgs(n, tokens), summary_tokens=0, t=T).mode == mode


def test_force_with_nothing_outside_the_keep_window_condenses_nothing() -> None:
    p = plan(msgs(8, 100), summary_tokens=0, t=T, force=True)  # all in the keep window
    assert p.mode == "none" and not p.should_summarize
    assert "nothing outside the keep window" in p.reason


def test_outlook_few_messages() -> None:
    from recap.core.planning.outlook import outlook

    o = outlook(msgs(25, 100), summary_tokens=0, t=T)
    assert o.state == "few-messages" and not o.plan.should_summarize
    assert o.why == "25 messages, not over 30"
    assert "over 30 messages (6 more)" in o.trigger
    assert "80% of the 32000-token budget (23100 more tokens)" in o.trigger
    assert (o.forced_messages, o.forced_tokens) == (15, 1500)


def test_outlook_normal_blocked_waits_for_capacity() -> None:
    from recap.core.planning.outlook import outlook

    o = outlook(msgs(60, 100), summary_tokens=1000, t=T)  # 7000 of 32000
    assert o.state == "normal-blocked"
    assert "normal rule cannot fire" in o.why and "2000 tokens" in o.why
    assert o.trigger == "the context reaching 80% of the 32000-token budget (18600 more tokens)"
    # What the trigger names really fires: 18600 more tokens reach capacity, one less does not.
    assert plan([*msgs(60, 100), MessageInfo(61, "user", 18600)], summary_tokens=1000,
                t=T).mode == "capacity"
    assert plan([*msgs(60, 100), MessageInfo(61, "user", 18599)], summary_tokens=1000,
                t=T).mode == "none"


def test_outlook_small_batch_and_due_and_nothing_to_condense() -> None:
    from recap.core.planning.outlook import outlook

    t = Thresholds(trigger_messages=30, trigger_tokens=15000, batch_size=20, keep_recent=10,
                   context_budget_tokens=100000)
    small = outlook(msgs(35, 100), summary_tokens=0, t=t)  # 25 candidates, batch 20: full
    assert small.state == "normal-blocked"
    growing = outlook(msgs(35, 100), summary_tokens=0,
                      t=Thresholds(30, 15000, 40, 10, 100000))  # batch of 25 can still grow
    assert growing.state == "small-batch"
    assert growing.trigger.startswith("the candidate batch (up to 40 messages) passing 15000")
    due = outlook(msgs(31, 751), summary_tokens=0, t=T)
    assert due.state == "due" and due.why.startswith("normal:") and due.trigger == ""
    stuck = outlook(msgs(32, 100, pinned=set(range(1, 23))), summary_tokens=0, t=T)
    assert stuck.state == "nothing-to-condense" and stuck.forced_messages == 0
    assert stuck.trigger == ("more messages than the newest 10 (the keep window) that are "
                             "not pinned")
    full = outlook([MessageInfo(1, "user", 33000, pinned=True)], summary_tokens=0, t=T)
    assert full.state == "nothing-to-condense" and full.plan.needs_escalation
    assert full.trigger.startswith("nothing Recap can condense")
    small = outlook(msgs(3, 100), summary_tokens=0, t=T)  # all in the keep window
    assert small.state == "few-messages" and small.forced_messages == 0
    assert outlook([], summary_tokens=0, t=T).state == "empty"


def test_tokens_to_capacity_is_exact() -> None:
    from recap.core.planning.outlook import tokens_to_capacity
    from recap.core.planning.policy import CAPACITY_USAGE, usage

    for budget in (1000, 32000, 33333, 99999):
        for used in (0, 1, 799, budget // 2, budget - 1):
            need = tokens_to_capacity(0, used, budget)
            assert usage(0, used + need, budget) >= CAPACITY_USAGE
            assert need == 0 or usage(0, used + need - 1, budget) < CAPACITY_USAGE


def _info(i: int, role: str, *, calls: tuple[str, ...] = (), answers: tuple[str, ...] = (),
          pinned: bool = False) -> MessageInfo:
    return MessageInfo(i, role, 50, pinned, calls, answers)


def test_a_call_and_its_results_are_one_unit_by_id_whatever_rows_they_arrive_in() -> None:
    t = Thresholds(3, 10, 4, 1, 100000)
    ms = [_info(1, "user"), _info(2, "assistant", calls=("a", "b")),
          _info(3, "tool", answers=("b",)), _info(4, "user"),  # the user spoke in between
          _info(5, "tool", answers=("a",)), _info(6, "assistant"), _info(7, "user")]
    # 2..5 is one unit (a is answered in 5): a batch of 4 stops before it ...
    assert plan(ms, summary_tokens=0, t=t, force=True).batch_ids == (1,)
    # ... and a batch of 5 takes it whole.
    t5 = Thresholds(3, 10, 5, 1, 100000)
    assert plan(ms, summary_tokens=0, t=t5, force=True).batch_ids == (1, 2, 3, 4, 5)


def test_results_by_id_pin_their_call_and_unanswered_calls_stand_alone() -> None:
    t = Thresholds(3, 10, 50, 1, 100000)
    ms = [_info(1, "assistant", calls=("a",)), _info(2, "user", answers=("a",), pinned=True),
          _info(3, "assistant", calls=("x",)), _info(4, "user"), _info(5, "assistant")]
    # 1+2 pinned together; 3's call was never answered (the user moved on): alone.
    assert plan(ms, summary_tokens=0, t=t, force=True).batch_ids == (3, 4)


def test_a_result_whose_call_was_condensed_is_its_own_unit() -> None:
    t = Thresholds(3, 10, 1, 1, 100000)
    ms = [_info(7, "tool", answers=("gone",)), _info(8, "assistant"), _info(9, "user")]
    assert plan(ms, summary_tokens=0, t=t, force=True).batch_ids == (7,)


# -- condense_to: a fold goes down to a low-water mark of the budget (cache-aware) --

LOW = Thresholds(trigger_messages=30, trigger_tokens=15000, batch_size=20, keep_recent=10,
                 context_budget_tokens=32000, condense_to=0.3)  # low-water mark 9600 tokens


@pytest.mark.parametrize(("n", "tokens", "summary", "mode", "taken"), [
    (31, 751, 0, "normal", 20),       # 23281 - 9600 = 13681 <= the batch's 15020: batch only
    (25, 1100, 0, "capacity", 15),    # 27500, but only 15 lie outside the keep window
    (36, 760, 0, "capacity", 24),     # 27360 - 9600 = 17760 <= 24 x 760
    (36, 760, 1000, "capacity", 25),  # the summary counts: 28360 - 9600 = 18760 <= 25 x 760
    (62, 420, 0, "capacity", 40),     # 26040 - 9600 = 16440 <= 40 x 420
    (40, 800, 0, "aggressive", 35),   # 100%: aggressive mode is not changed by the mark
])
def test_a_fold_condenses_down_to_the_low_water_mark(n: int, tokens: int, summary: int,
                                                     mode: str, taken: int) -> None:
    p = plan(msgs(n, tokens), summary_tokens=summary, t=LOW)
    assert p.mode == mode
    assert p.batch_ids == tuple(range(1, taken + 1))
    assert p.batch_tokens == taken * tokens
    assert ("condensing to 30% of the budget" in p.reason) == (mode != "aggressive"
                                                               and taken > 20)
    if mode == "aggressive":
        assert p == plan(msgs(n, tokens), summary_tokens=summary, t=T)


def test_low_water_normal_fold_goes_past_the_batch() -> None:
    t = Thresholds(30, 15000, 20, 10, 100000, condense_to=0.1)  # mark 10000
    p = plan(msgs(60, 800), summary_tokens=500, t=t)  # 48500: 61%, normal
    assert p.mode == "normal"
    assert p.batch_ids == tuple(range(1, 50))  # 38500 needed -> 49 x 800 = 39200
    assert p.reason.endswith("; condensing to 10% of the budget")


def test_low_water_respects_keep_window_pins_units_and_the_job_cap() -> None:
    roles = {i: ("user" if i % 2 else "assistant") for i in range(1, 63)}
    roles[42] = "tool"  # 41 (assistant) + 42 (tool) are one unit, at the 40th message taken
    t = Thresholds(30, 15000, 20, 10, 32000, condense_to=0.3)
    p = plan(msgs(62, 420, pinned={3, 25}, roles=roles), summary_tokens=0, t=t)  # 81%
    assert p.mode == "capacity"
    assert p.batch_ids == tuple(i for i in range(1, 43) if i not in (3, 25))  # 41 whole
    few = plan(msgs(62, 420), summary_tokens=0, t=Thresholds(30, 15000, 20, 50, 32000,
                                                              condense_to=0.3))
    assert few.batch_ids == tuple(range(1, 13))  # only 12 lie outside a keep window of 50
    capped = Thresholds(30, 15000, 20, 10, 32000, max_batch_tokens=10000, condense_to=0.3)
    q = plan(msgs(62, 420), summary_tokens=0, t=capped)
    assert q.batch_tokens <= 10000 and len(q.batch_ids) == 23  # the rest waits for a follow-up


def test_low_water_forced_fold_and_blocked_normal_rule() -> None:
    t = Thresholds(30, 15000, 20, 10, 32000, condense_to=0.05)  # mark 1600
    p = plan(msgs(40, 100), summary_tokens=0, t=t)
    assert p == plan(msgs(40, 100), summary_tokens=0, t=T)  # triggers unchanged: blocked
    assert p.normal_blocked and not p.should_summarize
    forced = plan(msgs(40, 100), summary_tokens=0, t=t, force=True)
    assert forced.mode == "forced" and forced.batch_ids == tuple(range(1, 25))
    assert forced.batch_tokens == 2400 and forced.normal_blocked


def test_might_trigger_agrees_with_plan_under_a_low_water_mark() -> None:
    import random

    rng = random.Random(11)
    for _ in range(2000):
        n = rng.randint(0, 60)
        ms = [MessageInfo(i, rng.choice(["user", "assistant", "tool"]),
                          rng.randint(0, 2500), rng.random() < 0.1) for i in range(n)]
        summary = rng.randint(0, 3000)
        t = Thresholds(30, 15000, 20, 10, 32000, condense_to=rng.choice([0.0, 0.2, 0.5]))
        p = plan(ms, summary_tokens=summary, t=t)
        base = plan(ms, summary_tokens=summary, t=Thresholds(30, 15000, 20, 10, 32000))
        assert p.mode == base.mode and p.normal_blocked == base.normal_blocked
        assert p.batch_ids[:len(base.batch_ids)] == base.batch_ids  # it only goes further
        if p.should_summarize:
            assert might_trigger(message_count=n, active_tokens=sum(m.token_count for m in ms),
                                 summary_tokens=summary, t=t)
