"""Benchmark 5: API input tokens to keep a long conversation summarized.

- Recap: every request its worker sent during the shared conversation run;
- naive: at each point where Recap ran a job, re-summarize the whole history
  from scratch (Recap's own summarizer and prompt, previous summary None);
- LangMem and LangChain's middleware over the same messages (recap/evals/peers.py);
- the floor: every condensed message sent once, plus the previous summary that
  each of Recap's calls must carry.

Tokens are counted from each request's text with Recap's tokenizer (system +
every text block), the same way for every system. Target: Recap within 1.3x of the floor;
with memories on (the default: the summary call mines them too, one tool call per
chunk) within 1.15x. The retention guard's repair calls are listed on their own row.
"""

from __future__ import annotations

import re
from typing import Any

from recap.bench.harness import env as benv
from recap.bench.harness.extras import peers, pyplot
from recap.bench.harness.stats import report, table

PLOT = "tokens.png"
_PREVIOUS = re.compile(r"<previous_summary>\n(.*?)\n</previous_summary>", re.S)


def messages_for(quick: bool) -> int:
    return 200 if quick else 1000


def floor_tokens(run: Any, count: Any) -> tuple[int, int]:
    """(condensed message tokens, previous summaries carried) for Recap's applied jobs."""
    ids = sorted(run.token_of)
    condensed = sum(run.token_of[i] for first, last in run.runs for i in ids
                    if first <= i <= last)
    carried = 0
    for body in run.requests:
        content = body["messages"][0]["content"]
        found = _PREVIOUS.search(content if isinstance(content, str) else "")
        if found and found.group(1).strip() != "(none yet)":
            carried += count(found.group(1))
    return condensed, carried


def naive_tokens(run: Any, script: list[tuple[str, str]], fake: Any, count: Any) -> tuple[int, int]:
    """(input tokens, calls) re-summarizing the whole history at each of Recap's jobs."""
    from recap.core.prompts.summarize import Turn
    from recap.evals.standin import request_tokens
    from recap.settings import get_settings
    from recap.worker.jobs.resources import build_resources

    summarizer = build_resources(get_settings()).summarizer
    turns = [Turn(i, role, content) for i, (role, content) in enumerate(script)]
    fake.reset()
    for index in run.trips:
        summarizer.summarize(None, turns[:index + 1])
    return sum(request_tokens(b, count) for b in fake.requests), len(fake.requests)


def plot(rows: list[tuple[str, int]]) -> str:
    """The plot (with --plots), and the line that names it."""
    path = benv.plot_path(PLOT)
    if path is None:
        return ""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.8))
    names = [r[0] for r in rows]
    ax.barh(names, [r[1] / 1000 for r in rows], color=["#777", "#2a7", "#c44", "#48c", "#a6c"])
    for y, (_, v) in enumerate(rows):
        ax.text(v / 1000, y, f" {v / 1000:,.0f}k", va="center")
    ax.set_xscale("log")
    ax.set_xlabel("summarization input tokens (thousands, log scale)")
    ax.invert_yaxis()
    ax.set_title("Input tokens to keep the conversation summarized")
    return benv.save_plot(fig, path)


def run(quick: bool = False) -> str:
    from recap.bench.harness.convo import demo_runs
    from recap.evals.peers import PEERS
    from recap.evals.standin import recap_kind, request_tokens
    from recap.llm.tokens import count_tokens

    peers()
    n = messages_for(quick)
    env, recap, script = demo_runs(n)
    latency = env.latency
    env.fake.delay = 0.0  # token counts do not depend on latency
    by_kind: dict[str, list[int]] = {}
    for body in recap.requests:
        by_kind.setdefault(recap_kind(body) or "other", []).append(
            request_tokens(body, count_tokens))
    summary_calls = by_kind.get("summary", [])
    try:
        recap_tokens = sum(summary_calls)
        condensed, carried = floor_tokens(recap, count_tokens)
        naive, naive_calls = naive_tokens(recap, script, env.fake, count_tokens)
        peer_rows: list[list[object]] = []
        bars = [("floor", condensed + carried), ("Recap", recap_tokens),
                ("naive full re-summarization", naive)]
        for peer in PEERS:
            env.fake.reset()
            result = peer(script, env.fake.url)
            used = sum(request_tokens(b, count_tokens) for b in env.fake.requests)
            peer_rows.append([result.name, used, len(env.fake.requests), result.condensed,
                              f"{used / (condensed + carried):.2f}x",
                              result.error or ""])
            if not result.error:
                bars.append((result.name.split(" (")[0], used))
    finally:
        env.fake.delay = latency
    floor = condensed + carried
    recap_condensed = sum(1 for first, last in recap.runs for i in recap.token_of
                          if first <= i <= last)
    extra: list[list[object]] = [
        [f"Recap extra: {kind} calls (default on; peers have none)", sum(v), len(v), "",
         f"{sum(v) / floor:.2f}x",
         "retention guard" if kind == "repair" else "not in the comparison"]
        for kind, v in sorted(by_kind.items()) if kind != "summary"]
    rows: list[list[object]] = [
            ["floor: condensed messages once + summaries carried", floor,
             len(recap.runs), recap_condensed, "1.00x", f"{condensed} + {carried}"],
            ["Recap (summary calls; with memories on they mine the facts too)", recap_tokens,
             len(summary_calls), recap_condensed, f"{recap_tokens / floor:.2f}x",
             "target <= 1.15x with memories on"],
            *extra,
            ["naive full re-summarization (at Recap's trip points)", naive, naive_calls,
             recap_condensed, f"{naive / floor:.1f}x", "whole history each time"]] + peer_rows
    return report(f"tokens: summarization input tokens over a {n}-message conversation "
                  f"(target: Recap within 1.3x of the floor, 1.15x with memories on)",
                  table(["system", "input tokens", "calls", "messages condensed", "vs floor",
                         "notes"], rows)
                  + plot(bars))
