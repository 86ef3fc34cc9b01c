"""Benchmark: every text scan Recap runs on what users paste runs in linear time.

Each scanner (the specifics of a message or a summary, bulk blocks and their
excerpt, Recap's tags defused, echoes of its prompt, what the user wrote
themselves and whether a fact is theirs, instruction marks, an entry's
context) reads 10 KB, 100 KB and 1 MB of each pathological shape: one
unbroken token (base64-like), repeated separators, nested brackets, a long
digit run, white space after a tag opener, lines of quotes and fences,
quotation marks of every script (pairs, nested, unclosed), runs of line
breaks of every kind, and the words of a long turn (recall's cues, read
against a context as long as the input).
Printed per shape: the seconds of all scanners at each size (each scanner's
fastest of at least three calls)
and the ratio per 10x input; linear time gives about 10, the target is at most
15. No services and no network: pure functions only.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from recap.bench.harness.stats import table

SIZES = (10_000, 100_000, 1_000_000)
TARGET_RATIO = 15.0
# A size that takes longer than this is not run at the next size (a quadratic
# scanner would take hours at 1 MB); its ratio then reads "> limit".
GIVE_UP_S = 60.0


def _fill(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


SHAPES: dict[str, Callable[[int], str]] = {
    "one token": lambda n: _fill("QmFzZTY0a2V5OjEyMzQ1Njc4OTA", n),
    "repeated separators": lambda n: _fill("a.-@_/:", n),
    "nested brackets": lambda n: "([{<" * (n // 8) + ">}])" * (n // 8),
    "long digit run": lambda n: "1" * n,
    "white space after <": lambda n: "< " + " " * (n - 2),
    "quotes and fences": lambda n: _fill("\n> ```\n\n", n),
    # Quotation marks of every script, closed by one mark of two („ by “ not ”),
    # nested, or never closed.
    "quote pairs": lambda n: _fill("„“", n),
    "quote marks of every script": lambda n: _fill("„«“‹「『\"”»›」』‘‚", n),
    "line breaks": lambda n: _fill("\r\u2028\u2029\x85\x0b\x0c\x1c\n", n),
    "words of a long turn": lambda n: _fill("alpha7 beta-2 gamma/x.py delta ", n),
}


def scanners() -> dict[str, Callable[[str], object]]:
    """Every scanner of untrusted text, uncached (a benchmark must not time a cache)."""
    from recap.core import defuse, specifics, text
    from recap.core.context import lookback
    from recap.core.memories import provenance
    from recap.core.prompts import bulk, echo
    from recap.core.retention import details, entries
    from recap.llm.offline import OfflineSummarizer
    from recap.llm.summarizer import sent_texts

    corpus = echo.sent_corpus(sent_texts(OfflineSummarizer()))
    extract = specifics.extract_specifics.__wrapped__  # type: ignore[attr-defined]
    return {
        "specifics": lambda s: extract(s),
        "specifics (summary)": lambda s: extract(s, whole=True),
        "contains": lambda s: specifics.contains(s, "1234"),
        "bulk excerpt": lambda s: bulk.excerpt_bulk(s, max_tokens=50, count=len),
        "tags": text.defuse_all,
        "echo": lambda s: echo.strip_echo.__wrapped__(s, corpus),  # type: ignore[attr-defined]
        "own words": lambda s: provenance.own_text("user", s, None),
        "provenance": lambda s: provenance.attribute("The user's code is 1234.", "user", [s]),
        "instruction marks": provenance.instruction_like,
        "entry": lambda s: entries.entry(s, "1234"),
        "quotations": provenance.drop_quoted,
        "headers and labels": defuse.defuse_text,
        "entry escapes": defuse.defuse_entry,
        "details near-copies": details.strip_details,
        # The newest turn (its first MAX_SCAN_CHARS) against a context as long as the input.
        "recall cues": lambda s: lookback.cues(s, context=s),
    }


def _time(fn: Callable[[str], object], text: str) -> float:
    """The fastest of at least three calls, repeated until they took half a second
    (at most 50): the minimum is what the scan costs, whatever else the machine runs."""
    best = float("inf")
    spent = 0.0
    for i in range(50):
        t0 = time.perf_counter()
        fn(text)
        took = time.perf_counter() - t0
        best, spent = min(best, took), spent + took
        if i >= 2 and spent >= 0.5:
            break
    return best


def measure(sizes: tuple[int, ...] = SIZES) -> list[list[object]]:
    """One row per shape: seconds at each size, ratios per 10x, the slowest scanner."""
    rows: list[list[object]] = []
    scan = scanners()
    for name, make in SHAPES.items():
        seconds: list[float | None] = []
        slowest = ""
        for n in sizes:
            if seconds and (seconds[-1] is None or seconds[-1] > GIVE_UP_S):
                seconds.append(None)
                continue
            text = make(n)
            each = {k: _time(fn, text) for k, fn in scan.items()}
            seconds.append(sum(each.values()))
            slowest = max(each, key=lambda k: each[k])
        ratios = [f"{b / a:.1f}" if a and b else "> limit"
                  for a, b in zip(seconds, seconds[1:], strict=False)]
        worst = max((float(r) for r in ratios if r != "> limit"), default=0.0)
        ok = "yes" if "> limit" not in ratios and worst <= TARGET_RATIO else "NO"
        rows.append([name, *(f"{s:.3f}" if s is not None else "-" for s in seconds),
                     *ratios, slowest, ok])
    return rows


def run(quick: bool = False) -> str:
    sizes = SIZES[:2] if quick else SIZES
    head = ["shape", *(f"{n // 1000:,} KB s" for n in sizes),
            *(f"x{b // a} ratio" for a, b in zip(sizes, sizes[1:], strict=False)),
            "slowest scanner", f"<= {TARGET_RATIO:g}"]
    out = table(head, measure(sizes))
    text = (f"\n*scan: seconds of every scanner over each pathological shape, each scanner's "
            f"fastest of at least three calls "
            f"(`recap bench --only scan`); linear is a ratio of about 10 per 10x*\n\n"
            f"{out}\n")
    print(text, flush=True)
    return text
