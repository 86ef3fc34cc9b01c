"""The cost benchmark's pricing engine (recap/bench/harness/pricing.py) and frontier
(recap/bench/cost.py) on hand-made requests (the benchmark itself runs the real
pipeline; here only the arithmetic of the cache model and the kept axis)."""

from __future__ import annotations

import pytest

from recap.bench.cost import dominating, frontier, on_frontier
from recap.bench.harness.pricing import (
    PRICE_READ,
    PRICE_WRITE,
    Priced,
    keeps,
    price,
    shaped,
    without_breakpoints,
)

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


def row(name: str, cost: float, kept: float, read: int = 90, written: int = 10) -> Priced:
    return Priced(name, 10, written, read, 0, 0, cost, cost, 0.0, kept)


def test_a_peer_is_dominated_only_by_a_cheaper_recap_setting_keeping_as_much() -> None:
    rows = [row("full history, no caching", 100, 0.9),
            row("LangChain SummarizationMiddleware", 10, 0.5),
            row("Recap, caching (default)", 20, 0.8),
            row("Recap, caching, cheap but lossy", 5, 0.4),
            row("Recap, caching, cold cache", 8, 0.6, read=50, written=50),
            row("Recap, caching, wins", 9, 0.5),
            row("Recap, no caching", 9, 0.9, read=0)]  # not a caching setting
    peer = rows[1]
    assert [p.name for p in dominating(rows, peer)] == ["Recap, caching, wins"]
    assert on_frontier(rows, rows[3])  # the cheapest, whatever it keeps
    assert not on_frontier(rows, peer)  # "wins" costs less and keeps as much
    assert not on_frontier(rows, rows[2])  # "Recap, no caching" costs less, keeps more
    assert on_frontier(rows[:-1], rows[2])  # without it nothing keeps 80% for less
    text = frontier(rows, "demo")
    assert "Recap, caching, wins: 0.090, 50.0%, 90% cache hits" in text
    assert "the default is NOT on the frontier" in text  # "Recap, no caching" beats it
