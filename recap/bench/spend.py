"""Benchmark: Recap's own account of what its replies cost (recap.core.spend, the
counters ``recap stats`` and ``GET /v1/sessions/{id}`` report) next to the cost
benchmark's block-level model of the same requests (recap.bench.harness.pricing:
each request's blocks and breakpoints, priced by Claude's prompt-cache rules).

For each conversation (the demo's, and short messages with many turns) Recap
runs once (the real pipeline, the stand-in summarizing); then, for Recap's path
and for full history with caching (every message, none dropped):

- accounted: the session's sums, read as ``recap.session(id).spend`` reads them;
- modelled: the requests Recap actually built (``as_request(build_context(...))``
  after each user message), and the full history's, priced block by block.

The gap is what the estimate leaves out (the app's system prompt, the memories
block, the wrappers; the same system prompt on both sides) and where its prefix
rule differs from the breakpoints. No pauses: calls follow each other within the
cache's lifetime. Summarizing is the stand-in's usage, which measures the
mechanism, not a model's answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recap.bench.harness import env as benv
from recap.bench.harness.stats import report, table

# Large enough that the modelled full history never drops a message.
NO_BUDGET = 10 ** 9


def messages_for(quick: bool) -> dict[str, int]:
    return {"demo": 200, "short": 400} if quick else {"demo": 1000, "short": 2000}


def run(quick: bool = False) -> str:
    from recap.bench.harness.convo import SESSION, conversation_run
    from recap.bench.harness.pricing import full_history, price
    from recap.bench.harness.seed import demo_script, short_script
    from recap.llm.tokens import count_tokens
    from recap.sessions.view import session

    benv.setup()
    rows: list[list[object]] = []
    for conversation, n in messages_for(quick).items():
        # A key of its own (the default policy, named): a fresh run whose session
        # is still in the database when it is read.
        recap = conversation_run(n, conversation, RECAP_POLICY="adaptive")
        spent = session(SESSION).spend
        script = demo_script(n) if conversation == "demo" else short_script(n)
        full = full_history(script, NO_BUDGET, count_tokens)
        for path, bodies, accounted in (
                ("Recap", recap.bodies, (spent.recap_cache_read_tokens,
                                         spent.recap_cache_write_tokens,
                                         spent.recap_uncached_tokens)),
                ("full history", full, (spent.full_cache_read_tokens,
                                        spent.full_cache_write_tokens,
                                        spent.full_uncached_tokens))):
            rows.append(_row(conversation, path, accounted, bodies, price, count_tokens))
        rows.append([conversation, "verdict (accounted)", f"{spent.replies} replies",
                     f"Recap {spent.recap_cost_tokens} (summarizing in "
                     f"{spent.summarize_input_tokens} / out {spent.summarize_output_tokens})",
                     f"full {spent.full_cost_tokens}",
                     f"saved {spent.saved_tokens:+d} ({spent.verdict})", ""])
    return report("spend: Recap's own account of its replies' input next to the block-level "
                  "model of the same requests (stand-in; no pauses)",
                  table(["conversation", "path", "accounted read / written / uncached",
                         "modelled read / written / uncached", "accounted cost",
                         "modelled cost", "accounted / modelled"], rows))


def _row(conversation: str, path: str, accounted: tuple[int, int, int],
         bodies: list[dict[str, Any]], price: Callable[..., Any],
         count: Callable[[str], int]) -> list[object]:
    from recap.core.spend import priced

    written, read, uncached, cost, _ = price(bodies, count, [False] * len(bodies))
    mine = priced(*accounted)
    return [conversation, path, " / ".join(map(str, accounted)),
            f"{read} / {written} / {uncached}", round(mine), round(cost),
            f"{mine / cost:.3f}" if cost else "n/a"]
