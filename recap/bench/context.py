"""Benchmark 6: assembled context tokens per model call (the sawtooth) against the budget.

Recap: ``build_context(...)["tokens"]`` after each user message of the shared
conversation run; peers: the tokens of the messages they hand to the model.
"""

from __future__ import annotations

from recap.bench.harness import env as benv
from recap.bench.harness.extras import peers, pyplot
from recap.bench.harness.stats import percentile, report, table

PLOT = "context.png"


def plot(series: list[tuple[str, list[int]]], budget: int, trigger: int) -> str:
    """The plot (with --plots), and the line that names it."""
    path = benv.plot_path(PLOT)
    if path is None:
        return ""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for name, values in series:
        ax.plot(range(1, len(values) + 1), [v / 1000 for v in values], label=name, lw=1.2)
    ax.axhline(budget / 1000, color="k", ls="--", lw=1, label=f"budget ({budget:,})")
    ax.axhline(trigger / 1000, color="grey", ls=":", lw=1, label=f"80% ({trigger:,})")
    ax.set_xlabel("model call (after each user message)")
    ax.set_ylabel("context tokens (thousands)")
    ax.set_title("Assembled context per model call")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    return benv.save_plot(fig, path)


def run(quick: bool = False) -> str:
    from recap.bench.harness.convo import demo_runs
    from recap.bench.tokens import messages_for
    from recap.evals.peers import BUDGET, PEERS, TRIGGER
    from recap.settings import get_settings

    peers()
    n = messages_for(quick)
    env, recap, script = demo_runs(n)
    series = [("Recap", recap.context)]
    errors = []
    latency, env.fake.delay = env.fake.delay, 0.0
    try:
        for peer in PEERS:
            env.fake.reset()
            result = peer(script, env.fake.url)
            series.append((result.name, result.context))
            if result.error:
                errors.append(f"{result.name}: {result.error}")
    finally:
        env.fake.delay = latency
    budget = get_settings().context_budget_tokens
    assert budget == BUDGET, "peers are configured for the default budget"
    steady = len(series[0][1]) // 3  # skip the first third: before any summary
    rows = [[name, len(v), max(v), f"{percentile(v[steady:], 50):.0f}",
             min(v[steady:]) if v[steady:] else "", sum(x > budget for x in v)]
            for name, v in series]
    return report(f"context: tokens per model call over {n} messages (budget {budget:,})",
                  table(["system", "model calls", "max", "median (last 2/3)",
                         "min (last 2/3)", "calls over budget"], rows)
                  + ("\n\nErrors: " + "; ".join(errors) if errors else "")
                  + plot(series, budget, TRIGGER))
