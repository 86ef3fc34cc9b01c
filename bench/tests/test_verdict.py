"""The defaults' verdict (bench/verdict/) runs end to end on tiny workloads, so
``python -m bench --quick`` cannot silently break. No timings, and no assertion on
who wins: the bench prints figures, it does not judge the code under test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.verdict.judge import answerable
from bench.verdict.shapes import USER_ID, Probe, scripts
from bench.verdict.workloads import NAMES, build
from recap.bench.harness.pricing import flat

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.unit
def test_workloads_are_seeded_and_plant_their_facts() -> None:
    for name in NAMES:
        w = build(name, "tiny")
        assert w == build(name, "tiny")  # no randomness outside the seed
        text = "\n".join(t for s in scripts(w) for _, t in s)
        assert all(f.sentence in text for f in w.facts), name


@pytest.mark.unit
def test_agent_transcript_pairs_tool_calls_with_results_read_again() -> None:
    w = build("agent", "tiny")
    messages = list(w.sessions[0][1])
    uses = [b for role, c in messages if role == "assistant" and isinstance(c, list)
            for b in c if b["type"] == "tool_use"]
    results = [c[0] for role, c in messages if role == "user" and isinstance(c, list)]
    assert [b["id"] for b in uses] == [r["tool_use_id"] for r in results]
    assert len({u["input"]["path"] for u in uses}) < len(uses)  # a document read twice
    assert flat([results[0]]) == results[0]["content"]


@pytest.mark.unit
def test_multi_session_chat_is_one_users() -> None:
    w = build("multi", "tiny")
    assert len(w.sessions) > 1 and w.user_id == USER_ID


@pytest.mark.unit
def test_the_judge_counts_references_whose_answer_the_reply_request_carries() -> None:
    # A hand-made conversation: the user states a code, chats, then asks for it back
    # at reply 2; a request that dropped the statement cannot answer it.
    kept = {"system": [{"type": "text", "text": "summary: the code is QX-41"}],
            "messages": [{"role": "user", "content": "what was the code?"}]}
    lost = {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "what was the code?"}]}]}
    result = {"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "raised at a.py:9"}]}]}
    probes = [Probe(2, "QX-41", "what was the code?"), Probe(3, "a.py:9", "where?"),
              Probe(9, "QX-41", "beyond the last request")]
    assert answerable([{}, {}, kept, result], probes) == (2, 3)
    assert answerable([{}, {}, lost, result], probes) == (1, 3)
    assert answerable([], []) == (0, 0)


@pytest.mark.unit
def test_referring_workloads_ask_back_what_was_stated_before() -> None:
    for name in ("sittings", "coding", "holdout"):
        w = build(name, "tiny")
        script = [m for s in scripts(w) for m in s]
        user_at = [i for i, (role, _) in enumerate(script) if role == "user"]
        assert w.probes, name
        for p in w.probes:
            at = user_at[p.reply]
            assert script[at][1].startswith(p.turn), name  # the turn that refers back
            assert p.answer not in script[at][1], name  # it does not carry the answer
            assert any(p.answer in t for _, t in script[:at]), name  # stated before


@pytest.mark.unit
def test_quick_sizes_match_what_the_workloads_promise() -> None:
    from recap.llm.tokens import count_tokens

    coding = build("coding", "quick")
    results = [c[0]["content"] for role, c in coding.sessions[0][1]
               if role == "user" and isinstance(c, list)]
    sizes = [count_tokens(r) for r in results]
    assert len(results) >= 40 and 500 <= min(sizes) and max(sizes) <= 8000
    assert len(coding.probes) >= 20
    chat = build("sittings", "quick")
    assert len(chat.cold) >= 30 and chat.messages >= 600
    text = sum(count_tokens(t) for s in scripts(chat) for _, t in s)
    assert text < 32_000  # the whole chat fits the budget
    messages = chat.sessions[0][1]
    user_at = [i for i, (role, _) in enumerate(messages) if role == "user"]
    starts = [user_at[r] for r in chat.cold]
    for p in chat.probes:  # asked two or more sittings after the answer was stated
        asked = sum(1 for s in starts if s <= user_at[p.reply]) - 1
        said = next(i for i, (_, t) in enumerate(messages) if p.answer in t)
        assert asked - (sum(1 for s in starts if s <= said) - 1) >= 2, p


# The verdict runs as ``python -m bench --quick`` does: in a process of its own, on the
# bench's own database, queue and stand-in, so nothing it configures (settings, the
# Celery app's queues, engines) can reach the tests that run after it.
VERDICT = """
from bench.verdict import main as verdict
from recap.bench.harness import env as benv
benv.setup(0.0)
try:
    print(verdict.run(size="tiny", names=("agent", "multi", "coding"), threshold=True))
finally:
    benv.teardown()
"""


@pytest.mark.system
def test_quick_verdict_code_runs_on_tiny_workloads() -> None:
    from bench.verdict import main as verdict

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RECAP_", "DATABASE_URL", "CELERY_", "ANTHROPIC_"))}
    done = subprocess.run([sys.executable, "-c", VERDICT], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    for name in ("agent", "multi", "coding"):
        for peer in ("LangChain", "LangMem", "full history with caching"):
            assert f"{name}: defaults dominate {peer}: " in out
        assert f"{name}: target cost <= 0.8x the cheaper peer's" in out
    assert verdict.THRESHOLD in out and verdict.DEFAULTS in out
    assert "error" not in out
    assert "answerable at reference" in out and "neutral stand-in" in out
