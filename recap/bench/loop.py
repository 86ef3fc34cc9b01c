"""Benchmark: how long the asyncio API (``recap.aio``) holds the event loop when the
content is large. Target: at most 50 ms of loop lateness for each shape.

A ticker on the loop sleeps 1 ms at a time and keeps its worst lateness (how much
later than asked it woke): the longest stretch a call kept every other coroutine
of the app's process waiting. Each shape runs warm (the engine, psycopg and the
tokenizer loaded by a first call), three times; the median of the three worst
lateness figures is printed, with the runs.

- ``add_message`` of one message of 20,000 text blocks;
- ``add_message`` of one message holding a 5 MB inline image (base64);
- ``build_context`` over a window of six such messages (three of each).

``recap bench --only loop [--quick] [--json]`` (the stand-in's latency plays no part).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import random
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any

from recap.bench.harness import env as benv
from recap.bench.harness.extras import need
from recap.bench.harness.stats import report, table

TARGET_MS = 50.0
RUNS = 3
TICK_S = 0.001


def text_blocks(n: int) -> list[dict[str, Any]]:
    """A content array of ``n`` short text blocks (what a pasted log split by lines is)."""
    return [{"type": "text", "text": f"line {i}: GET /api/v2/items/{i} 200 in {i % 97} ms"}
            for i in range(n)]


def image_message(chars: int) -> list[dict[str, Any]]:
    """A user message with one inline PNG whose base64 data is about ``chars`` long."""
    raw_len = chars * 3 // 4
    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 1600, 1200)
    rng = random.Random(7)
    raw = head + rng.randbytes(max(0, raw_len - len(head)))
    data = base64.b64encode(raw).decode("ascii")
    return [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": data}},
            {"type": "text", "text": "What does this dashboard say about last night?"}]


async def worst_lateness(call: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """(worst loop lateness, wall time) in seconds while ``call`` runs."""
    loop = asyncio.get_running_loop()
    worst = 0.0
    done = False

    async def tick() -> None:
        nonlocal worst
        while not done:
            before = loop.time()
            await asyncio.sleep(TICK_S)
            worst = max(worst, loop.time() - before - TICK_S)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)
    started = time.perf_counter()
    try:
        await call()
    finally:
        wall = time.perf_counter() - started
        done = True
        await ticker
    return worst, wall


def shapes(blocks: int, image_chars: int) -> list[tuple[str, str, Callable[[], Any], str]]:
    """(name, session, content factory, role) for the add_message shapes."""
    return [(f"aio.add_message: {blocks:,} text blocks", "loop-blocks",
             lambda: text_blocks(blocks), "assistant"),
            (f"aio.add_message: a {image_chars / 1e6:.0f} MB inline image", "loop-image",
             lambda: image_message(image_chars), "user")]


async def measure(*, blocks: int, image_chars: int, runs: int = RUNS) -> list[dict[str, Any]]:
    """Each shape ``runs`` times: lateness and wall time per run, in ms."""
    from recap import aio

    await aio.add_message("loop-warm", "user", "warm up the engine and the tokenizer")
    await aio.build_context("loop-warm", system_prompt="You help.")
    out: list[dict[str, Any]] = []
    for name, session, content, role in shapes(blocks, image_chars):
        made = content()
        results = []
        for r in range(runs):
            results.append(await worst_lateness(functools.partial(
                aio.add_message, f"{session}-{r}", role, made)))
        out.append({"shape": name, "lateness_ms": [x[0] * 1000 for x in results],
                    "wall_ms": [x[1] * 1000 for x in results]})
    # A window of six: three of each shape, alternating user (image) and assistant.
    blocks_msg, image_msg = text_blocks(blocks), image_message(image_chars)
    for i in range(6):
        role, made = ("user", image_msg) if i % 2 == 0 else ("assistant", blocks_msg)
        await aio.add_message("loop-window", role, made)
    results = [await worst_lateness(
        lambda: aio.build_context("loop-window", system_prompt="You help."))
        for _ in range(runs)]
    out.append({"shape": "aio.build_context: a window of six such messages",
                "lateness_ms": [x[0] * 1000 for x in results],
                "wall_ms": [x[1] * 1000 for x in results]})
    await aio.close()
    return out


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def figures(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Machine-readable figures (``--json``): median lateness per shape, in ms."""
    return {f"{r['shape']} (loop lateness ms)": round(median(r["lateness_ms"]), 2)
            for r in rows}


def run(quick: bool = False, *, as_json: bool = False) -> str:
    need("greenlet")  # SQLAlchemy's asyncio engine (the asyncio extra, in the bench extra)
    benv.setup()
    benv.reset_state()
    # Quick: the same kinds of content, smaller, for a smoke run.
    blocks, image_chars = (2_000, 500_000) if quick else (20_000, 5_000_000)
    rows = asyncio.run(measure(blocks=blocks, image_chars=image_chars))
    if as_json:
        out = json.dumps({"benchmark": "loop", "figures": figures(rows)})
        print(out, flush=True)
        return out + "\n"
    return report(
        f"loop: worst event-loop lateness while one call runs (target <= {TARGET_MS:.0f} ms; "
        f"median of {RUNS}, runs listed)",
        table(["call", "lateness ms (median)", "runs ms", "wall ms (median)"],
              [[r["shape"], f"{median(r['lateness_ms']):.1f}",
                ", ".join(f"{x:.1f}" for x in r["lateness_ms"]),
                f"{median(r['wall_ms']):.0f}"] for r in rows]))

