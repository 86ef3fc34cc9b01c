"""The defaults' verdict (bench/verdict.py) runs end to end on tiny workloads, so
``python -m bench --quick`` cannot silently break. No timings, and no assertion on
who wins: the bench prints figures, it does not judge the code under test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.workloads import NAMES, USER_ID, build, flat, scripts

ROOT = Path(__file__).resolve().parents[1]


def test_workloads_are_seeded_and_plant_their_facts() -> None:
    for name in NAMES:
        w = build(name, "tiny")
        assert w == build(name, "tiny")  # no randomness outside the seed
        text = "\n".join(t for s in scripts(w) for _, t in s)
        assert all(f.sentence in text for f in w.facts), name


def test_agent_transcript_pairs_tool_calls_with_results_read_again() -> None:
    w = build("agent", "tiny")
    messages = list(w.sessions[0][1])
    uses = [b for role, c in messages if role == "assistant" and isinstance(c, list)
            for b in c if b["type"] == "tool_use"]
    results = [c[0] for role, c in messages if role == "user" and isinstance(c, list)]
    assert [b["id"] for b in uses] == [r["tool_use_id"] for r in results]
    assert len({u["input"]["path"] for u in uses}) < len(uses)  # a document read twice
    assert flat([results[0]]) == results[0]["content"]


def test_multi_session_chat_is_one_users() -> None:
    w = build("multi", "tiny")
    assert len(w.sessions) > 1 and w.user_id == USER_ID


# The verdict runs as ``python -m bench --quick`` does: in a process of its own, on the
# bench's own database, queue and stand-in, so nothing it configures (settings, the
# Celery app's queues, engines) can reach the tests that run after it.
VERDICT = """
from bench import env as benv, verdict
benv.setup(0.0)
try:
    print(verdict.run(size="tiny", names=("agent", "multi"), threshold=True))
finally:
    benv.teardown()
"""


def test_quick_verdict_code_runs_on_tiny_workloads() -> None:
    from bench import verdict

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RECAP_", "DATABASE_URL", "CELERY_", "ANTHROPIC_"))}
    done = subprocess.run([sys.executable, "-c", VERDICT], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    for name in ("agent", "multi"):
        for peer in ("LangChain", "LangMem", "full history with caching"):
            assert f"{name}: defaults dominate {peer}: " in out
        assert f"{name}: target cost <= 0.8x the cheaper peer's" in out
    assert verdict.THRESHOLD in out and verdict.DEFAULTS in out
    assert "error" not in out
