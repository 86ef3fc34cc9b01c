"""The defaults' verdict (bench/verdict.py) runs end to end on tiny workloads, so
``python -m bench --quick`` cannot silently break. No timings, and no assertion on
who wins: the bench prints figures, it does not judge the code under test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bench.workloads import NAMES, USER_ID, build, flat, scripts


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


@pytest.fixture
def bench_env() -> Iterator[Any]:
    """The bench's own environment (database, queue, stand-in), as ``python -m bench``
    makes it: the test session's settings set aside, then restored."""
    import os

    from bench import env as benv
    from worker.jobs.resources import reset_process_state

    saved = dict(os.environ)
    for key in [k for k in os.environ if k.startswith(("RECAP_", "DATABASE_URL", "CELERY_",
                                                        "ANTHROPIC_"))]:
        del os.environ[key]
    reset_process_state()
    try:
        yield benv.setup(0.0)
    finally:
        benv.teardown()
        os.environ.clear()
        os.environ.update(saved)
        reset_process_state()


def test_quick_verdict_code_runs_on_tiny_workloads(bench_env: Any) -> None:
    from bench import verdict

    out = verdict.run(size="tiny", names=("agent", "multi"), threshold=True)
    for name in ("agent", "multi"):
        for peer in ("LangChain", "LangMem", "full history with caching"):
            assert f"{name}: defaults dominate {peer}: " in out
        assert f"{name}: target cost <= 0.8x the cheaper peer's" in out
    assert verdict.THRESHOLD in out and verdict.DEFAULTS in out
    assert "error" not in out
