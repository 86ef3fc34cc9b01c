"""Percentiles and Markdown tables for benchmark output (pure)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation; NaN when empty."""
    if not values:
        return math.nan
    xs = sorted(values)
    k = (len(xs) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def ms(seconds: float) -> str:
    return "n/a" if math.isnan(seconds) else f"{seconds * 1000:.2f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table (also readable as plain text)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


def report(title: str, body: str) -> str:
    """Print a titled block and return it, so __main__ can collect the output."""
    text = f"\n### {title}\n\n{body}\n"
    print(text, flush=True)
    return text


def section(name: str, text: str) -> str:
    """``text`` between the markers by which a docs page includes it from the file
    ``--out`` wrote (``--8<-- "FILE:name"``, pymdownx.snippets); in Markdown they are
    comments, so the tables read the same on a terminal."""
    body = text.strip("\n")
    return f"\n<!-- --8<-- [start:{name}] -->\n{body}\n<!-- --8<-- [end:{name}] -->\n"


def timed(fn: Callable[[], object], repeat: int, *, warm: int = 1) -> list[float]:
    """Seconds of each of ``repeat`` calls of ``fn``, after ``warm`` untimed ones
    (connections, cold caches, the planner's statistics)."""
    for _ in range(warm):
        fn()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out
