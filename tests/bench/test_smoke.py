"""``recap bench`` runs (no timing assertions: benchmarks print figures).

The cheapest pieces in a subprocess, as a user runs them: ``python -m recap.bench
--quick --only overhead`` from outside the checkout, against its own database and
queue; the command line's refusals; and the pure helpers in-process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from recap.bench.harness import env as benv
from recap.bench.harness.extras import INSTALL, MissingExtra, need, pyplot
from recap.bench.main import NAMES

RECAP = str(Path(sys.executable).with_name("recap"))


def _bench_env() -> dict[str, str]:
    """The caller's environment without the test run's Recap settings: a bench run
    sets up its own database, queue and stand-in."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RECAP_", "DATABASE_URL", "CELERY_", "ANTHROPIC_"))}
    env["TIKTOKEN_CACHE_DIR"] = os.environ.get("TIKTOKEN_CACHE_DIR", "")
    return env


def test_bench_runs_overhead_quick_outside_the_checkout(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "recap.bench", "--quick", "--only", "overhead"],
                          cwd=tmp_path, env=_bench_env(), capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "### overhead" in proc.stdout
    assert "| as shipped (socket check) | total" in proc.stdout
    assert "- command: python -m recap.bench --quick --only overhead" in proc.stdout
    assert list(tmp_path.iterdir()) == []  # no plots unless asked for, nothing else left


def test_bench_rejects_unknown_names() -> None:
    proc = subprocess.run([sys.executable, "-m", "recap.bench", "--only", "nope"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "unknown benchmark(s) nope; choose from hook, coldstart, loop" in proc.stderr


def test_recap_bench_lists_every_benchmark_and_refuses_json_for_tables() -> None:
    shown = subprocess.run([RECAP, "bench", "--help"], capture_output=True, text=True,
                           timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert all(name in shown.stdout for name in NAMES)
    for option in ("--only", "--quick", "--latency", "--out", "--plots", "--json"):
        assert option in shown.stdout
    refused = subprocess.run([RECAP, "bench", "--json", "--only", "hook,scan"],
                             env=_bench_env(), capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1
    assert refused.stderr == "recap: error: --json takes only hook, loop, not scan\n"


def test_a_missing_package_of_the_extra_names_the_install() -> None:
    with pytest.raises(MissingExtra) as raised:
        need("recap_bench_no_such_module")
    assert str(raised.value) == ("this benchmark needs recap_bench_no_such_module, which the "
                                 "bench extra installs: pip install 'recap-worker[bench]'")
    assert INSTALL == "pip install 'recap-worker[bench]'"


def test_plots_only_with_a_folder(tmp_path: Path) -> None:
    benv.plot_to(None)
    assert benv.plot_path("cost.png") is None
    benv.plot_to(tmp_path / "plots")
    try:
        path = benv.plot_path("cost.png")
        assert path == tmp_path / "plots" / "cost.png"
        fig, _ = pyplot().subplots()
        assert benv.save_plot(fig, path) == f"\n\nPlot: {path}"
        assert path.read_bytes().startswith(b"\x89PNG")
    finally:
        benv.plot_to(None)


def test_percentiles_and_tables() -> None:
    from recap.bench.harness.stats import percentile, table

    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5], 99) == 5
    assert table(["a", "b"], [[1, 22]]).splitlines()[2] == "| 1 | 22 |"


def test_peer_digest_matches_recap_style() -> None:
    from recap.evals.standin import peer_digest

    body = {"max_tokens": 1024, "messages": [
        {"role": "user", "content": "one two three"},
        {"role": "assistant", "content": "four five"},
        {"role": "user", "content": "This is summary of the conversation so far: OLD\n\n"
                                    "Extend this summary by taking into account the new "
                                    "messages above:"}]}
    assert peer_digest(body) == "OLD\nThe user said: one two three\nThe assistant said: four five"


def test_stand_in_tells_recaps_requests_from_the_peers() -> None:
    from recap.core.prompts.summarize import SYSTEM_PROMPT
    from recap.core.prompts.titles import TITLE_SYSTEM
    from recap.core.retention.repairs import repair_prompt
    from recap.testing import recap_kind

    user = [{"role": "user", "content": "one two three"}]
    repair = [{"role": "user", "content": repair_prompt("A summary.", ["42 (the user said 42)"])}]
    assert [recap_kind({"system": system, "messages": user})
            for system in (SYSTEM_PROMPT, TITLE_SYSTEM)] == ["summary", "title"]
    assert recap_kind({"system": SYSTEM_PROMPT, "messages": repair}) == "repair"
    assert recap_kind({"system": "You are a helpful assistant.", "messages": user}) is None


def test_bench_reads_the_demo_conversation_from_the_package() -> None:
    from recap.bench.harness.seed import demo_script
    from recap.demo.conversation import available

    script = demo_script(6)
    assert [role for role, _ in script] == ["user", "assistant"] * 3
    assert script[0][1].startswith("Hi, I'm Maya Okafor")
    assert len(demo_script(available())) == available() == 1000
    with pytest.raises(ValueError, match="has 1000 messages; asked for 1001"):
        demo_script(1001)


def test_bench_scan_times_every_shape() -> None:
    from recap.bench import scan

    rows = scan.measure((1_000, 10_000))
    assert [r[0] for r in rows] == list(scan.SHAPES)
    assert all(len(r) == len(rows[0]) for r in rows)
