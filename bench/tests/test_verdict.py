"""The defaults' verdict (bench/verdict/) runs end to end on tiny workloads, so
``python -m bench --quick`` cannot silently break. No timings, and no assertion on
who wins: the bench prints figures, it does not judge the code under test."""

from __future__ import annotations

import random

import pytest

from bench.tests.lab import run_on_own_bench
from bench.verdict.clearing import PLACEHOLDER, ClearToolUses, cleared, clearing_history
from bench.verdict.judge import answerable
from bench.verdict.shapes import USER_ID, Message, Probe, scripts
from bench.verdict.workloads import NAMES, build
from recap.bench.harness import env as benv
from recap.bench.harness.pricing import flat, price, texts


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
def test_every_workload_asks_back_what_was_stated_before() -> None:
    for name in NAMES:
        w = build(name, "tiny")
        script = [m for s in scripts(w) for m in s]
        user_at = [i for i, (role, _) in enumerate(script) if role == "user"]
        assert w.probes, name
        for p in w.probes:
            at = user_at[p.reply]  # a reply that exists
            assert script[at][1].startswith(p.turn), name  # the turn that refers back
            assert p.answer not in script[at][1], name  # it does not carry the answer
            assert any(p.answer in t for _, t in script[:at]), name  # stated before


@pytest.mark.unit
def test_asked_turns_are_few_in_the_later_half_and_named_or_in_own_words() -> None:
    from bench.verdict import asked
    from bench.verdict.workloads import agent_script, multi_session
    from recap.bench.harness.seed import demo_script, short_script
    from recap.evals.facts import plant

    facts = plant(4, seed=25)
    chats: dict[str, list[Message]] = {
        "demo": list(demo_script(60)), "short": list(short_script(80, seed=25)),
        "agent": agent_script(3, facts, seed=25)}
    for name, messages in chats.items():
        w = build(name, "tiny")
        replies = sum(1 for role, _ in messages if role == "user")
        assert 2 <= len(w.probes) <= max(2, replies // 8), name  # few: the cost shape holds
        assert all(p.reply >= replies // 3 for p in w.probes), name  # the later part
        assert w == build(name, "tiny") and w != build(name, "tiny", seed=26), name
        found = asked.fair(asked.demo_asks(messages, random.Random(1)) if name == "demo" else
                           asked.chat_asks(messages) if name == "short" else
                           asked.agent_asks(messages), [flat(c) for _, c in messages])
        assert {a.named for a in found} == {True, False}, name  # both kinds to choose from
        for a in found:
            assert a.answer in flat(messages[a.at][1]) and a.answer not in a.turn, (name, a)
    # multi: some turns of the second session ask about the first one's messages.
    w = build("multi", "tiny")
    first, second = (list(m) for _, m in w.sessions)
    replies = sum(1 for role, _ in first if role == "user")
    later = [p for p in w.probes if p.reply >= replies]
    assert later and any(p.turn.startswith(asked.AGO) for p in later)
    for p in later:
        at = [i for i, (role, _) in enumerate(second) if role == "user"][p.reply - replies]
        in_first = any(p.answer in str(t) for _, t in first)
        assert in_first != any(p.answer in str(t) for _, t in second[:at]), p
    assert multi_session(2, 40, facts, seed=25).probes == ()  # added by the build only


@pytest.mark.unit
def test_held_out_travel_desk_books_with_its_own_tools_and_asks_back() -> None:
    from bench.verdict import travel
    from recap.llm.tokens import count_tokens

    assert "held out" in (travel.__doc__ or "").lower() and "travel" in NAMES
    w = build("travel", "quick")
    assert w == build("travel", "quick") and w.tool_heavy and w.paused
    messages = list(w.sessions[0][1])
    tools = {b["name"] for role, c in messages if role == "assistant" and isinstance(c, list)
             for b in c if b["type"] == "tool_use"}
    assert tools == {"flight_search", "fare_rules", "hotel_rates", "calendar", "mailbox", "book"}
    sizes = [count_tokens(r) for r in results_of(messages)]
    assert min(sizes) < 300 and max(sizes) > 4000
    assert len(w.probes) >= 10
    script = [t for s in scripts(w) for _, t in s]
    for p in w.probes:  # one right answer: the detail sits in one earlier tool result
        assert sum(p.answer in t for t in script) >= 1
        assert p.answer not in p.turn
    wordings = {p.turn.split("\n")[0] for p in w.probes}
    for other in ("coding", "analyst", "holdout"):
        assert not wordings & {p.turn.split("\n")[0] for p in build(other, "quick").probes}


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


def words(text: str) -> int:
    return len(text.split())


def session(results: int, *, size: int = 100) -> list[Message]:
    """A task, then ``results`` tool calls (``size`` words each), alternating two tools."""
    out: list[Message] = [("user", "Look into it please.")]
    for k in range(results):
        name = ("search", "sql")[k % 2]
        out.append(("assistant", [{"type": "tool_use", "id": f"t{k}", "name": name,
                                   "input": {"q": f"query {k}"}}]))
        out.append(("user", [{"type": "tool_result", "tool_use_id": f"t{k}",
                              "content": " ".join([f"r{k}"] * size)}]))
    return out


def results_of(messages: list[Message]) -> list[str]:
    return [c[0]["content"] for role, c in messages if role == "user" and isinstance(c, list)]


@pytest.mark.unit
def test_tool_clearing_clears_the_oldest_results_past_the_trigger_and_keeps_the_newest() -> None:
    msgs = session(6)  # about 600 words of results
    assert cleared(msgs, ClearToolUses(trigger=1000), count=words) == msgs  # under the trigger
    edit = ClearToolUses(trigger=300)
    kept = results_of(cleared(msgs, edit, count=words))
    assert kept[:3] == [PLACEHOLDER] * 3 and kept[3:] == results_of(msgs)[3:]  # keep 3
    spared = results_of(cleared(msgs, ClearToolUses(trigger=300, exclude_tools=("sql",)),
                                count=words))
    assert spared[:3] == [PLACEHOLDER, results_of(msgs)[1], PLACEHOLDER]
    # Too little to free: the edit is not applied at all.
    assert cleared(msgs, ClearToolUses(trigger=300, clear_at_least=10_000), count=words) == msgs
    inputs = cleared(msgs, ClearToolUses(trigger=300, clear_tool_inputs=True), count=words)
    calls = [c[0]["input"] for role, c in inputs if role == "assistant" and isinstance(c, list)]
    assert calls[:3] == [{}] * 3 and calls[3] == {"q": "query 3"}
    assert results_of(msgs)[0] != PLACEHOLDER  # the client's history is never changed


@pytest.mark.unit
def test_tool_clearing_pays_a_cache_write_from_the_first_block_it_clears_anew() -> None:
    msgs = session(8)
    edit = ClearToolUses(trigger=450)
    bodies = clearing_history(msgs, edit, 100_000, words)
    fired = [any(PLACEHOLDER in t for t in texts(b)) for b in bodies]
    assert fired.index(True) > 1  # under the trigger at first: full history's requests
    first = fired.index(True)
    from recap.testing import request_usage

    cache: set[bytes] = set()
    usage = [request_usage(b, cache, count=words) for b in bodies]
    # Before the edit fires, each request reads the one before it from the cache;
    # once it fires, each new result moves the cleared boundary, so a request reads
    # only the prefix before the first result (the first request's) and writes the rest.
    task = usage[1]["cache_read_input_tokens"]
    assert words(benv.SYSTEM_PROMPT) < task < usage[first - 1]["cache_read_input_tokens"]
    assert all(u["cache_read_input_tokens"] == task for u in usage[first:])
    fresh = price(bodies, words, [False] * len(bodies))
    assert fresh[0] > 0 and fresh[1] > 0  # writes and reads, priced like every system


@pytest.mark.unit
def test_agent_sessions_pause_only_before_a_new_task_and_chats_keep_the_seeded_share() -> None:
    from bench.verdict.drive import run_clearing, run_full
    from bench.verdict.main import CLEARING, base_of, rows_of

    for name in ("agent", "coding", "analyst", "travel"):
        w = build(name, "tiny")
        assert w.tool_heavy and w.paused and w.paused[0] == 0, name
        replies = [c for role, c in w.sessions[0][1] if role == "user"]
        assert all(isinstance(replies[r], str) for r in w.paused), name  # typed, no result
    for name in ("demo", "short", "multi", "sittings", "holdout"):
        assert build(name, "tiny").paused is None and not build(name, "tiny").tool_heavy, name
    w = build("analyst", "tiny")
    runs = [run_full(w, caching=False), run_full(w), run_clearing(w, CLEARING[1], "clearing")]
    rows = rows_of(w, runs, lambda t: frozenset(), words)
    base = base_of(rows)
    assert rows[1].total(base) != rows[1].uniformly(base)  # the agent's rule differs
    assert rows[1].warm(base) <= rows[1].total(base)
    assert rows[2].priced.input < rows[1].priced.input  # the 30k trigger fires on it


@pytest.mark.unit
def test_held_out_analyst_uses_other_tools_and_results_of_varied_size() -> None:
    from recap.llm.tokens import count_tokens

    w = build("analyst", "quick")
    messages = w.sessions[0][1]
    tools = {b["name"] for role, c in messages if role == "assistant" and isinstance(c, list)
             for b in c if b["type"] == "tool_use"}
    assert tools == {"web_search", "fetch_url", "run_sql", "shell"}
    sizes = [count_tokens(r) for r in results_of(list(messages))]
    assert len(sizes) >= 40 and min(sizes) < 500 and max(sizes) > 8000
    assert len(w.probes) >= 10 and "analyst" in NAMES and len(NAMES) == 9
    coding = {p.turn.split("\n")[0] for p in build("coding", "quick").probes}
    assert not coding & {p.turn.split("\n")[0] for p in w.probes}  # its own wording


@pytest.mark.unit
def test_dominance_is_judged_under_each_price_rule_and_the_floor_sits_beside() -> None:
    from bench.verdict.main import (
        DEFAULTS,
        FULL,
        Row,
        against_full,
        dominates_four,
        rules_summary,
        sweep_table,
    )
    from recap.bench.harness.pricing import PRIMARY, RULES, Priced, Spent, Usage

    def row(name: str, usage: tuple[Usage, ...], spent: Spent | None = None) -> Row:
        return Row(name, Priced(name, usage, usage, spent or Spent(), 0.0, 0.5), (1, 8), 0)

    # Full history with caching reads a 10,000-token prefix on each of 10 replies;
    # the defaults fold once (10,000 tokens in, 500 out) and read 2,000 after.
    folded = (Usage(2_000, 0, 0), *(Usage(0, 2_000, 0),) * 9)
    dear = (Usage(0, 0, 20_000),) * 10
    rows = [row("full history, no caching", (Usage(0, 0, 10_000),) * 10),
            row(FULL, (Usage(0, 10_000, 0),) * 10), row(DEFAULTS, folded, Spent(10_000, 500)),
            row("LangChain SummarizationMiddleware", dear), row("LangMem summarize", dear),
            row("tool-result clearing, defaults", dear),
            row("server-side compaction, trigger 50k", dear, Spent(9, 9, at_reply_rates=True))]
    at_01 = next(r for r in RULES if r.label == "read 0.1x, summarizer haiku-5-5")
    at_0025 = next(r for r in RULES if r.label == "read 0.025x, summarizer haiku-5-5")
    assert dominates_four(rows, at_01) and not dominates_four(rows, at_0025)
    assert against_full(rows, at_01) < 1 < against_full(rows, at_0025)
    summary = rules_summary([("short", rows)])
    line = next(ln for ln in summary.splitlines() if ln.startswith(f"| {at_01.label} "))
    assert "| 1 of 1 " in line and f"{against_full(rows, at_01):.2f}x" in line
    assert "| 0 of 1 " in next(ln for ln in summary.splitlines()
                               if ln.startswith(f"| {at_0025.label} "))
    assert f"{PRIMARY.label} (primary)" in summary and PRIMARY.basis in summary
    text = sweep_table(build("short", "tiny"), rows, 12_000)
    floor = next(ln for ln in text.splitlines() if ln.startswith("| floor"))
    assert "| 0.150 " in floor and "| 0.240 " in floor  # 12,000 at 1.25x and 2x, of 100,000
    assert all(r.label in text for r in RULES) and "server-side compaction" in text


@pytest.mark.system
def test_quick_verdict_code_runs_on_tiny_workloads() -> None:
    from bench.verdict import main as verdict

    # As ``python -m bench --quick`` runs it (bench.tests.lab), on all nine workloads.
    done = run_on_own_bench("from bench.verdict import main as verdict",
                            'verdict.run(size="tiny", threshold=True)', timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    for name in NAMES:
        for peer in ("LangChain", "LangMem", "full history with caching",
                     "tool-result clearing, defaults (trigger 100k, keep 3)",
                     "tool-result clearing, trigger 30k, keep 3"):
            assert f"{name}: defaults dominate {peer}: " in out
        # Every workload refers back, so none shows n/a.
        assert f"{name}: target answerable at reference >= full history with caching's" in out
    assert "multi: target cost <= 0.7x full history with caching's on a chat" in out
    assert "coding: target cost <= 0.5x full history with caching's on a tool-heavy" in out
    assert "travel: target cost <= 0.5x full history with caching's on a tool-heavy" in out
    assert "the defaults dominate all four peers on " in out and " of 9 workloads" in out
    assert "(target 6; at " in out
    for row in ("defaults (trigger 150k)", "trigger 50k", "on demand at 80% of the 32k budget"):
        assert f"server-side compaction, {row}" in out  # a row, and a verdict line
    assert "with server-side compaction as a fifth peer (its rows that act): " in out
    assert "cost, 30% pauses" in out and "cost, no pauses" in out
    # Each workload's sweep: every rule a column, the floor a row; a line per rule.
    from recap.bench.harness.pricing import PRIMARY, RULES

    for name in ("agent", "multi", "coding", "analyst"):
        part = out.split(f"[start:{name}]")[1].split(f"[end:{name}]")[0]
        assert f"verdict, {name} workload: cost under each price rule" in part
        assert "| floor: every message written once, nothing read" in part
    assert all(rule.label in out for rule in RULES)
    assert "per price rule: dominance and Recap's cost" in out
    assert f"| {PRIMARY.label} (primary)" in out and "summarizing tokens in / out" in out
    assert verdict.THRESHOLD in out and verdict.DEFAULTS in out
    assert "error" not in out
    assert "answerable at reference" in out and "neutral stand-in" in out
    # The sections docs/benchmarks/ includes from the file --out writes (--8<--).
    for section in (*NAMES, "summary", "verdict"):
        assert out.count(f"<!-- --8<-- [start:{section}] -->") == 1, section
        assert out.count(f"<!-- --8<-- [end:{section}] -->") == 1, section
