"""The benchmark scripts run (no timing assertions: benchmarks print figures).

Runs the cheapest pieces in a subprocess, as a user would: ``python -m bench
--quick --only overhead`` against its own database and queue, and the pure
helpers in-process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parent.parent


def test_bench_cli_runs_overhead_quick() -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RECAP_", "DATABASE_URL", "CELERY_", "ANTHROPIC_"))}
    env["TIKTOKEN_CACHE_DIR"] = os.environ.get("TIKTOKEN_CACHE_DIR", "")
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--only", "overhead"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "### overhead" in proc.stdout
    assert "| as shipped (socket check) | total" in proc.stdout


def test_bench_rejects_unknown_names() -> None:
    proc = subprocess.run([sys.executable, "-m", "bench", "--only", "nope"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "unknown benchmark(s) nope" in proc.stderr


def test_percentiles_and_tables() -> None:
    from bench.stats import percentile, table

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


def test_bench_reads_the_demo_conversation_file() -> None:
    from bench.seed import CONVERSATION, demo_script

    script = demo_script(6)
    assert CONVERSATION.name == "conversation.json" and CONVERSATION.is_file()
    assert [role for role, _ in script] == ["user", "assistant"] * 3
    assert script[0][1].startswith("Hi, I'm Maya Okafor")


def test_bench_scan_times_every_shape() -> None:
    from bench import scan

    rows = scan.measure((1_000, 10_000))
    assert [r[0] for r in rows] == list(scan.SHAPES)
    assert all(len(r) == len(rows[0]) for r in rows)
