"""bench/cost.py's pricing engine on hand-made requests (the benchmark itself runs
the real pipeline; here only the arithmetic of the cache model and the kept axis)."""

from __future__ import annotations

from bench.cost import PRICE_READ, PRICE_WRITE, keeps, price, shaped, without_breakpoints


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
