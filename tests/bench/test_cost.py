"""The cost benchmark's pricing engine (recap/bench/harness/pricing.py) and frontier
(recap/bench/cost.py) on hand-made requests (the benchmark itself runs the real
pipeline; here only the arithmetic of the cache model, the price rules swept, the
floor and the kept axis)."""

from __future__ import annotations

import pytest

from recap.bench.cost import dominating, frontier, on_frontier
from recap.bench.harness.pricing import (
    PRICE_READ,
    PRICE_WRITE,
    PRIMARY,
    RULES,
    Priced,
    PriceRule,
    Spent,
    Usage,
    answer_tokens,
    floor_tokens,
    keeps,
    price,
    priced,
    shaped,
    spent_of,
    usages,
    without_breakpoints,
)
from recap.core.planning.prices import TABLE

pytestmark = pytest.mark.unit


def words(text: str) -> int:
    return len(text.split())


def test_each_reply_reads_what_the_previous_one_wrote() -> None:
    turns = [("user", "a b c d"), ("assistant", "e f"), ("user", "g h i")]
    bodies = [shaped(["sys tem"], turns[:1]), shaped(["sys tem"], turns)]
    # Reply 1 writes system (2) + user:abcd (4 words + "user:a" counts as one word) ...
    written, read, uncached, cost, paused = price(bodies, words, [False, True])
    assert uncached == 0  # the breakpoint is on the last block
    assert read == 2 + 4  # reply 2 reads reply 1's whole prefix
    assert written == (2 + 4) + (2 + 3)  # reply 1 writes all, reply 2 its new turns
    assert cost == PRICE_WRITE * written + PRICE_READ * read
    # A pause of more than 5 minutes before reply 2 empties the cache: all written.
    assert paused == PRICE_WRITE * (written + read)
    # Without breakpoints nothing is cached: every token at base price.
    plain = [without_breakpoints(b) for b in bodies]
    assert price(plain, words, [False, False])[2:4] == (written + read, written + read)


def test_kept_counts_verbatim_text_and_the_specifics_still_sent() -> None:
    script = [("user", "order 42 shipped"), ("assistant", "ok"), ("user", "refund 7 EUR")]
    summary_only = shaped(["the user had order 42"], [("user", "refund 7 EUR")])

    def specifics(text: str) -> frozenset[str]:
        return frozenset(w for w in text.split() if w.isdigit())

    verbatim, kept = keeps([summary_only, summary_only], script, words, specifics)
    assert verbatim == 3  # only the last user message is sent as written
    assert kept == 1.0  # 42 survives in the summary, 7 verbatim


# Only summarizing input costs anything: a row's cost is what it says.
FLAT = PriceRule("flat", read=0.0, write=0.0, output=0.0, summarizer_input=1.0,
                 summarizer_output=0.0)


def row(name: str, cost: int, kept: float, read: int = 90, written: int = 10) -> Priced:
    """A row costing ``cost`` under FLAT, with the cache-hit share read / (read + written)."""
    usage = (Usage(written, read, 0),)
    return Priced(name, usage, usage, Spent(cost), 0.0, kept)


def test_a_peer_is_dominated_only_by_a_cheaper_recap_setting_keeping_as_much() -> None:
    rows = [row("full history, no caching", 100, 0.9),
            row("LangChain SummarizationMiddleware", 10, 0.5),
            row("Recap, caching (default)", 20, 0.8),
            row("Recap, caching, cheap but lossy", 5, 0.4),
            row("Recap, caching, cold cache", 8, 0.6, read=50, written=50),
            row("Recap, caching, wins", 9, 0.5),
            row("Recap, no caching", 9, 0.9, read=0)]  # not a caching setting
    peer = rows[1]
    assert [p.name for p in dominating(rows, peer, FLAT)] == ["Recap, caching, wins"]
    assert on_frontier(rows, rows[3], FLAT)  # the cheapest, whatever it keeps
    assert not on_frontier(rows, peer, FLAT)  # "wins" costs less and keeps as much
    assert not on_frontier(rows, rows[2], FLAT)  # "Recap, no caching" costs less, keeps more
    assert on_frontier(rows[:-1], rows[2], FLAT)  # without it nothing keeps 80% for less
    text = frontier(rows, "demo", FLAT)
    assert "Recap, caching, wins: 0.090, 50.0%, 90% cache hits" in text
    assert "the default is NOT on the frontier" in text  # "Recap, no caching" beats it


def rule(label: str) -> PriceRule:
    return next(r for r in RULES if r.label == label)


def test_the_rules_swept_take_their_ratios_from_the_price_table() -> None:
    sonnet, haiku = TABLE["claude-sonnet-5-5"], TABLE["claude-haiku-5-5"]
    assert PRIMARY.label == "read 0.05x (list), summarizer haiku-5-5" and PRIMARY in RULES
    assert PRIMARY.read == sonnet.cache_read / sonnet.input
    assert PRIMARY.write == 1.25 and PRIMARY.output == 5
    assert PRIMARY.summarizer_input == haiku.input / sonnet.input
    assert PRIMARY.summarizer_output == haiku.output / sonnet.input
    same = rule("read 0.05x (list), summarizer sonnet-5-5")
    assert (same.summarizer_input, same.summarizer_output) == (1, 5)
    assert {r.read for r in RULES if r.ttl == "5m"} == {0.1, 0.05, 0.025}
    assert "what-if" in rule("read 0.025x, summarizer haiku-5-5").basis
    (hour,) = [r for r in RULES if r.ttl == "1h"]
    assert hour.write == 2 and hour.read == PRIMARY.read and "1h write $4" in hour.basis


def test_repricing_is_arithmetic_on_each_requests_counts() -> None:
    # Hand-made counts: waiting reads a 10,000-token prefix on each of 10 replies;
    # a fold summarizes it (10,000 tokens in, 500 out), writes a 2,000-token context
    # once and reads it on the 9 replies after.
    wait = Priced("wait", (Usage(0, 10_000, 0),) * 10, (Usage(0, 10_000, 0),) * 10,
                  Spent(), 0.0, 1.0)
    after = (Usage(2_000, 0, 0), *(Usage(0, 2_000, 0),) * 9)
    fold = Priced("fold", after, after, Spent(10_000, 500), 0.0, 1.0)
    at_01, at_0025 = (rule("read 0.1x, summarizer haiku-5-5"),
                      rule("read 0.025x, summarizer haiku-5-5"))
    assert wait.cost(at_01) == 10_000 and wait.cost(at_0025) == 2_500
    assert fold.cost(at_01) == 1.25 * 2_000 + 0.1 * 18_000 + 0.05 * 10_000 + 0.25 * 500
    # The fold pays at 0.1x; at 0.025x, waiting costs less than the fold.
    assert fold.cost(at_01) < wait.cost(at_01)
    assert fold.cost(at_0025) > wait.cost(at_0025)
    # The summarizer at the reply model's price: its input at 1x, output at 5x.
    dear = rule("read 0.1x, summarizer sonnet-5-5")
    assert fold.cost(dear) - fold.cost(at_01) == (1 - 0.05) * 10_000 + (5 - 0.25) * 500


def test_a_1h_cache_outlives_the_pauses_and_writes_at_2x() -> None:
    turns = [("user", "a b c d"), ("assistant", "e f"), ("user", "g h i")]
    bodies = [shaped(["sys tem"], turns[:1]), shaped(["sys tem"], turns)]
    p = priced("chat", bodies, Spent(), script=turns, pauses=[False, True], count=words,
               specifics=lambda t: frozenset())
    assert p.paused != p.warm == usages(bodies, words)
    (hour,) = [r for r in RULES if r.ttl == "1h"]
    assert p.cost(hour) == p.cost(hour, pauses=False) == sum(
        2 * u.written + hour.read * u.read + u.uncached for u in p.warm)
    assert p.cost(PRIMARY) > p.cost(PRIMARY, pauses=False)  # the pause empties a 5m cache


def test_the_floor_writes_every_message_once_and_reads_nothing() -> None:
    script = [("user", "a b c d"), ("assistant", "e f"), ("user", "g h i")]
    floor = floor_tokens("sys tem", (t for _, t in script), words)
    assert floor == 2 + 4 + 2 + 3
    # One request carrying everything is the floor exactly; replying after each user
    # message costs more under every rule (the history is read back).
    (once,) = usages([shaped(["sys tem"], script)], words)
    assert (once.written, once.read, once.uncached) == (floor, 0, 0)
    bodies = [shaped(["sys tem"], script[:1]), shaped(["sys tem"], script)]
    p = priced("full", bodies, Spent(), script=script, pauses=[False, False], count=words,
               specifics=lambda t: frozenset())
    assert all(p.cost(r) > r.write * floor for r in RULES)


def test_summarizing_output_is_what_the_stand_in_returned() -> None:
    answer = {"content": [{"type": "text", "text": "two words"},
                          {"type": "tool_use", "id": "t", "name": "x", "input": {"a": 1}}]}
    assert answer_tokens(answer, words) == 2 + len('{"a": 1}'.split())
    asked = {"messages": [{"role": "user", "content": "sum this up"}]}
    spent = spent_of([(asked, answer), (asked, {"content": []})], words)
    assert spent == Spent(input=6, output=4)
    assert spent.cost(PRIMARY) == 0.05 * 6 + 0.25 * 4
    assert spent_of([(asked, answer)], words, which=lambda b: False) == Spent()
