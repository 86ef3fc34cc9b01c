"""Server-side compaction as a verdict peer (bench/verdict/compaction.py): the
trigger's minimum, the compaction block sent back unchanged, everything before it
dropped from what the API reads, each compaction billed as its iteration, and the
summary from the stand-in's neutral rule. Counts are injected (a word is 1,000
tokens here), so a 50,000-token trigger is 50 words and the arithmetic is plain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_type_hints

import pytest

from bench.verdict.compaction import (
    MIN_TRIGGER,
    Compact,
    ContextWindowExceeded,
    OnDemand,
    TriggerTooLow,
    acts,
    as_read,
    billed,
    compact_history,
    fitted_trigger,
    on_demand_history,
    tokens,
)
from bench.verdict.shapes import Message
from recap.bench.harness import env as benv
from recap.bench.harness.pricing import PRIMARY, RULES, Spent, texts

SUMMARY = "- the digest"


def kilo(text: str) -> int:
    """A word is a thousand tokens."""
    return 1000 * len(text.split())


class Recorder:
    """A summariser that records what it was given and answers :data:`SUMMARY`."""

    def __init__(self) -> None:
        self.given: list[list[tuple[str, str]]] = []

    def __call__(self, turns: Sequence[tuple[str, str]], instructions: str | None) -> str:
        self.given.append(list(turns))
        return SUMMARY


def chat(turns: int, words: int = 10) -> list[Message]:
    """``turns`` exchanges of ``words`` words each way, every turn's words its own."""
    out: list[Message] = []
    for k in range(turns):
        out.append(("user", " ".join(f"ask{k}w{i}" for i in range(words))))
        out.append(("assistant", " ".join(f"say{k}w{i}" for i in range(words))))
    return out


def system() -> int:
    return kilo(benv.SYSTEM_PROMPT)


@pytest.mark.unit
def test_a_trigger_under_the_apis_minimum_is_refused_by_name() -> None:
    with pytest.raises(TriggerTooLow, match="under the API's minimum of 50,000"):
        Compact(trigger=MIN_TRIGGER - 1)
    assert Compact(trigger=MIN_TRIGGER).trigger == MIN_TRIGGER
    assert Compact().trigger == 150_000  # the documented default
    # Fitted from the workload's largest session: never under the minimum, never
    # near the model's window.
    assert fitted_trigger([12_000]) == MIN_TRIGGER
    assert fitted_trigger([20_000, 147_615]) == 73_000
    assert fitted_trigger([563_082]) == 100_000


@pytest.mark.unit
def test_the_edit_and_the_block_have_the_sdks_fields() -> None:
    from anthropic.types.beta import (
        BetaCompact20260112EditParam,
        BetaCompactionBlockParam,
        BetaCompactionIterationUsage,
    )

    param = Compact(trigger=60_000, instructions="Keep file paths.").param()
    assert param == {"type": "compact_20260112", "instructions": "Keep file paths.",
                     "trigger": {"type": "input_tokens", "value": 60_000}}
    assert set(param) <= set(get_type_hints(BetaCompact20260112EditParam))
    run = compact_history(chat(4), Compact(trigger=MIN_TRIGGER), summarize=Recorder(),
                          count=kilo)
    block = run.sent[-1]["messages"][-2]["content"][0]
    assert set(block) <= set(get_type_hints(BetaCompactionBlockParam))
    usage = run.iterations[0].usage()
    assert set(usage) == set(BetaCompactionIterationUsage.model_fields) - {"cache_creation"}
    assert OnDemand(32_000).param() == {"type": "summarize"}


def fired_once() -> tuple[list[Message], Recorder, Any]:
    # Exchanges of 10 + 10 words: the fourth request reads 70 words plus the system
    # prompt's 7, past a 60,000-token trigger; the third (50 + 7) is not.
    messages = chat(6)
    summarize = Recorder()
    run = compact_history(messages, Compact(trigger=60_000), summarize=summarize, count=kilo)
    return messages, summarize, run


@pytest.mark.unit
def test_the_block_is_sent_back_unchanged_and_everything_before_it_is_dropped() -> None:
    messages, summarize, run = fired_once()
    assert run.fired == [3] and acts(run)
    # Every request the app sends carries the edit, and its whole history.
    assert all(b["context_management"] == {"edits": [Compact(trigger=60_000).param()]}
               for b in run.sent)
    later = run.sent[4]["messages"]
    assert len(later) == 9  # user, assistant x 3, user, the reply with the block, user
    reply = later[7]["content"]
    assert reply[0] == {"type": "compaction", "content": SUMMARY}  # first, as it came
    assert reply[1] == {"type": "text", "text": messages[7][1]}
    assert run.sent[5]["messages"][7]["content"][0] is reply[0]  # never rebuilt
    # What the API reads: the summary, then what came after it; nothing before.
    read = texts(run.read[4])
    assert read == [benv.SYSTEM_PROMPT, SUMMARY, messages[7][1], messages[8][1]]
    assert not any(str(messages[k][1]) in "\n".join(read) for k in range(7))
    assert run.read[4] == as_read(run.sent[4])
    # The reply that fired was sampled from the summary alone.
    assert texts(run.read[3]) == [benv.SYSTEM_PROMPT, SUMMARY]
    # Before the trigger, the requests are full history's.
    assert run.read[2] == run.sent[2]


@pytest.mark.unit
def test_each_compaction_is_billed_as_its_iteration_at_the_reply_models_rates() -> None:
    messages, summarize, run = fired_once()
    (iteration,) = run.iterations
    # It read the whole request that fired (the newest user turn too) and wrote the summary.
    assert summarize.given == [[(r, str(c)) for r, c in messages[:7]]]
    assert iteration.input_tokens == system() + 70_000 == tokens(run.sent[3], kilo)
    assert iteration.output_tokens == kilo(SUMMARY)
    assert run.billed == billed([iteration]) == Spent(
        iteration.input_tokens, iteration.output_tokens, at_reply_rates=True)
    # Whatever the rule's summarizer, the iteration is priced as a call of the reply
    # model: base input, output at the reply model's output ratio (5x).
    for rule in RULES:
        assert run.billed.cost(rule) == iteration.input_tokens + 5 * iteration.output_tokens
    cheap = Spent(iteration.input_tokens, iteration.output_tokens)
    assert cheap.cost(PRIMARY) < run.billed.cost(PRIMARY)  # at the summarizer's: less
    assert iteration.usage()["type"] == "compaction"


@pytest.mark.unit
def test_a_compaction_rewrites_the_cached_prefix_after_the_system_prompt() -> None:
    from recap.testing import request_usage

    _, _, run = fired_once()
    cache: set[bytes] = set()
    usage = [request_usage(b, cache, count=kilo) for b in run.read]
    assert usage[2]["cache_read_input_tokens"] > system()  # full history reads its past
    assert usage[3]["cache_read_input_tokens"] == system()
    assert usage[4]["cache_read_input_tokens"] == system()  # written anew after the summary
    assert usage[5]["cache_read_input_tokens"] > system()  # then read again


@pytest.mark.unit
def test_a_session_that_never_reaches_the_trigger_is_full_history_and_does_not_act() -> None:
    summarize = Recorder()
    run = compact_history(chat(3), Compact(), summarize=summarize, count=kilo)
    assert not acts(run) and not summarize.given and run.billed == Spent(at_reply_rates=True)
    assert run.read == run.sent
    with pytest.raises(ContextWindowExceeded, match="200,000-token window"):
        compact_history(chat(1, words=201), Compact(), summarize=summarize, count=kilo)


@pytest.mark.unit
def test_on_demand_compacts_all_but_the_last_exchange_past_its_share_of_the_budget() -> None:
    tool: list[Message] = [("user", "Look at the logs please now."),
                           ("assistant", [{"type": "tool_use", "id": "t1", "name": "shell",
                                           "input": {"cmd": "tail"}}]),
                           ("user", [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": " ".join(f"log{i}" for i in range(40))}])]
    messages = [*chat(2), *tool, ("assistant", "The logs show one error only."),
                ("user", "Thanks, what next?")]
    summarize = Recorder()
    rule = OnDemand(100_000)  # compacts past 80,000 tokens: at the tool result (97,000)
    run = on_demand_history(messages, rule, summarize=summarize, count=kilo)
    assert rule.at == 80_000 and run.fired == [3]
    sent = run.sent[3]["messages"]
    # The block first, in place of what it summarises; the tool call kept with its result.
    assert sent[0]["content"] == [{"type": "compaction", "content": SUMMARY}]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"] == tool[1][1] and sent[2]["content"][0]["tool_use_id"] == "t1"
    assert summarize.given == [[(r, str(c)) for r, c in messages[:5]]]
    assert run.iterations[0].input_tokens == system() + 46_000  # what it summarised
    assert texts(run.read[4])[:2] == [benv.SYSTEM_PROMPT, SUMMARY]


@pytest.mark.integration
def test_the_summary_is_the_neutral_stand_ins_digest_over_the_messages_api() -> None:
    from bench.verdict.drive import stand_in_summarizer
    from recap.testing import FakeAnthropic

    fake = FakeAnthropic(neutral=True).start()
    try:
        summarize = stand_in_summarizer(fake.url)
        turns = [("user", "My flight is LX 318. It leaves at nine."),
                 ("assistant", "Noted the flight. Anything else?")]
        first = summarize(turns, None)
        assert first == "- My flight is LX 318.\n- Noted the flight."
        # A second compaction reads the first summary back and carries its lines.
        again = summarize([("user", first), ("user", "Book a taxi <at> eight. Thanks.")],
                          None)
        assert again == first + "\n- Book a taxi <at> eight."
        assert fake.requests[0]["max_tokens"] == 1024
    finally:
        fake.stop()


@pytest.mark.unit
def test_the_verdict_reports_a_row_that_never_fires_as_not_acting_and_leaves_it_out() -> None:
    from bench.verdict.main import DEFAULTS, FULL, IDLE, Row, brief, verdict
    from bench.verdict.workloads import build
    from recap.bench.harness.pricing import Priced, Usage

    def row(name: str, cost: float, *, acts: bool = True) -> Row:
        usage = (Usage(0, 0, round(cost * 10)),)  # one request of that many uncached tokens
        priced = Priced(name, usage, usage, Spent(), 0.0, 0.5)
        return Row(name, priced, (1, 8), 0, acts=acts)

    rows = [row("full history, no caching", 10.0), row(FULL, 9.0), row(DEFAULTS, 1.0),
            row("LangChain SummarizationMiddleware", 2.0), row("LangMem summarize", 2.0),
            row("tool-result clearing, defaults", 9.0),
            row("server-side compaction, defaults (trigger 150k)", 0.5, acts=False),
            row("server-side compaction, trigger 50k", 2.0)]
    assert brief(rows[6], 10.0) == IDLE and brief(rows[7], 10.0) != IDLE
    lines, four, five = verdict(rows, build("short", "tiny"), fits=False)
    assert ("short: server-side compaction, defaults (trigger 150k): does not act "
            "(no request passes its trigger)") in lines
    assert any(ln.startswith("short: defaults dominate server-side compaction, trigger 50k: "
                             "yes") for ln in lines)
    assert four and five  # the cheaper row that does not act is not held against them
    rows[7] = row("server-side compaction, trigger 50k", 0.5)
    assert verdict(rows, build("short", "tiny"), fits=False)[1:] == (True, False)
