"""Memory extraction: mined by the summary call itself (one tool call per
chunk) before the rows go; parsing trusts nothing."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from recap.api.ingest import add_message
from recap.cli import main as recap
from recap.core.memories.facts import parse_facts
from recap.db import transaction
from recap.errors import InvalidExtraction
from recap.sessions.overrides import memories
from recap.testing import FakeAnthropic, error, ok
from tests.checks import check_invariants
from tests.helpers import (
    LOW,
    run_and_wait,
    runs,
    seed,
    session_of,
    statuses,
)

EXTRACTING = {**LOW, "RECAP_EXTRACT_MEMORIES": "true"}

pytestmark = pytest.mark.usefixtures("celery_worker_thread")


@pytest.fixture(autouse=True)
def extraction_on(settings_env: Callable[..., None]) -> None:
    settings_env(**EXTRACTING)


def facts_json(*facts: tuple[str, str, object]) -> str:
    return json.dumps([{"fact": f, "category": c, "importance": i} for f, c, i in facts])


def answer(summary: str, *facts: tuple[str, str, object]) -> str:
    """A record_summary tool input, as the fake answers a scripted text that is JSON."""
    return json.dumps({"summary": summary, "facts": json.loads(facts_json(*facts))})


def run(sid: str) -> None:
    run_and_wait(sid, final={"applied", "dead"})


def invariants(sid: str, ids: list[int]) -> None:
    with transaction() as s:
        assert check_invariants(s, written={sid: ids}) == []


def test_parse_clamps_importance_and_falls_back_on_category() -> None:
    facts = parse_facts("```json\n" + facts_json(
        ("The user is vegetarian.", "preference", 9),
        ("The user lives in Lisbon.", "geography", 0),
        ("The user lives in Lisbon.", "personal", 3),  # exact duplicate text: kept once
        ("  The user's  sprint ends Friday. ", "PLAN", "4"),
        ("", "fact", 2)) + "\n```")
    assert [(f.fact, f.category, f.importance) for f in facts] == [
        ("The user is vegetarian.", "preference", 5),
        ("The user lives in Lisbon.", "other", 1),
        ("The user's sprint ends Friday.", "plan", 4)]


@pytest.mark.parametrize("bad", ["Sure! Here are the facts.", '{"fact": "x"}', '[{"f": 1}]'])
def test_parse_rejects_what_is_not_a_list_of_facts(bad: str) -> None:
    with pytest.raises(InvalidExtraction):
        parse_facts(bad)


def test_one_call_per_chunk_stores_summary_and_facts_with_the_batch_range(
        fake_api: FakeAnthropic) -> None:
    ids = seed("mem", 12)
    fake_api.script(ok(answer("The user planned a trip.",
                              ("The user is vegetarian.", "preference", 4))))
    run("mem")
    assert statuses("mem") == ["applied"]
    [m] = memories("mem")
    assert (m["fact"], m["category"], m["importance"]) == ("The user is vegetarian.",
                                                           "preference", 4)
    assert (m["first_message_id"], m["last_message_id"]) == (ids[0], ids[4])
    [request] = fake_api.requests  # no second call resends the batch
    assert request["tool_choice"] == {"type": "tool", "name": "record_summary"}
    assert request["tools"][0]["input_schema"]["required"] == ["summary", "facts"]
    assert "<conversation>" in request["messages"][0]["content"]
    assert session_of("mem").rolling_summary == "The user planned a trip."
    invariants("mem", ids)


def test_malformed_facts_are_skipped_and_model_text_is_sanitized(fake_api: FakeAnthropic) -> None:
    ids = seed("strict", 12)
    fake_api.script(ok(json.dumps({"summary": "Sum\u0000mary.", "facts": [
        "not an object", {"f": 1}, {"fact": "The user likes tea\u0000.", "category": "x",
                                    "importance": 9}]})))
    run("strict")
    assert statuses("strict") == ["applied"]
    assert [(m["fact"], m["category"], m["importance"]) for m in memories("strict")] == [
        ("The user likes tea.", "other", 5)]
    assert session_of("strict").rolling_summary == "Summary."
    invariants("strict", ids)


def test_an_answer_without_a_summary_any_way_is_kept_extractively_and_loses_nothing(
        fake_api: FakeAnthropic) -> None:
    ids = seed("nojson", 12)
    # No summary in the tool's answer, nor in either plain call that asks again.
    fake_api.route(lambda r: ok('{"facts": []}') if r.tool == "record_summary" else ok(""))
    run("nojson")
    # Not retried: every way was asked; the batch is kept extractively instead.
    [only] = runs("nojson")
    assert only.status == "applied" and only.fallback
    assert "UnusableSummary" in (only.reason or "")
    assert memories("nojson") == []  # nothing mined from answers without a summary
    invariants("nojson", ids)


def test_a_failed_call_is_retried_and_later_applied(fake_api: FakeAnthropic) -> None:
    ids = seed("later", 12)
    fake_api.script(error(529, "Overloaded"),
                    ok(answer("Summary.", ("The user's budget is $2,400.", "fact", 3))))
    run("later")
    assert statuses("later") == ["failed", "applied"]
    # The model's paraphrase stays with the session; the user's own sentence that
    # states it (a verbatim span of what they typed: recap.core.memories.verbatim) is theirs.
    kinds = {m["fact"]: [s["kind"] for s in m["sources"]] for m in memories("later")}
    assert kinds.pop("The user's budget is $2,400.") == ["unverified"]
    [(span, kind)] = kinds.items()
    assert kind == ["user"] and "budget" in span and "$2,400" in span, span
    invariants("later", ids)


def test_duplicates_across_jobs_are_stored_once(fake_api: FakeAnthropic) -> None:
    ids = seed("dedupe", 12)
    same = ("The user is called Ana.", "personal", 3)
    fake_api.script(ok(answer("S1.", same)))
    run("dedupe")
    ids += seed("dedupe", 5)
    fake_api.script(ok(answer("S2.", same)))
    run_and_wait("dedupe", n=2, final={"applied"})
    assert [m["fact"] for m in memories("dedupe")] == ["The user is called Ana."]
    invariants("dedupe", ids)


def test_disabled_extraction_asks_for_text_only(fake_api: FakeAnthropic,
                                                settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_EXTRACT_MEMORIES="false")
    ids = seed("off", 12)
    run("off")
    assert statuses("off") == ["applied"] and len(fake_api.requests) == 1
    assert "tools" not in fake_api.requests[0]
    invariants("off", ids)


def test_recap_memories_prints_them(
        fake_api: FakeAnthropic, capsys: pytest.CaptureFixture[str]) -> None:
    add_message("cli-mem", "user", "FACT: The user prefers dark mode.")  # in the first batch
    seed("cli-mem", 11)
    run("cli-mem")
    assert recap(["memories", "cli-mem"]) == 0
    # Who stated it (the SOURCE column), then the fact, once.
    assert "[3] fact       user       The user prefers dark mode." in capsys.readouterr().out
    assert recap(["memories", "nobody"]) == 1


# -- the answer cap follows the chunk; a cut-off answer splits it --

def test_the_answer_cap_grows_with_the_chunk(fake_api: FakeAnthropic) -> None:
    from recap.llm.structured import MIN_FACT_TOKENS
    from recap.settings import get_settings

    ids = seed("rich", 12, words=1000)  # a 5-message batch of ~6,500 tokens
    run("rich")
    assert statuses("rich") == ["applied"]
    [request] = fake_api.requests
    assert request["max_tokens"] > get_settings().max_summary_tokens + MIN_FACT_TOKENS
    invariants("rich", ids)


def test_a_cut_off_answer_splits_the_chunk_instead_of_failing(fake_api: FakeAnthropic) -> None:
    ids = seed("cut", 12, words=120)  # a 5-message batch of ~800 tokens
    # Cut off before its summary was whole (a whole one is kept, and only the facts
    # asked again: tests/jobs/test_weak_model.py).
    fake_api.script(ok(json.dumps({"facts": [{"fact": "The user is vegetarian.",
                                              "category": "preference", "importance": 4}]}),
                       stop_reason="max_tokens"),
                    ok(answer("First half.", ("The user is vegetarian.", "preference", 4))),
                    ok(answer("Then more.", ("The user lives in Lisbon.", "personal", 3))))
    run("cut")
    assert statuses("cut") == ["applied"]
    assert sorted(m["fact"] for m in memories("cut")) == ["The user is vegetarian.",
                                                          "The user lives in Lisbon."]
    whole, *parts = (r["messages"][0]["content"] for r in fake_api.requests)
    assert len(parts) >= 2  # split, each part summarized once, in order
    assert sum(p.count("<message role=") for p in parts) == whole.count("<message role=") == 5
    assert "First half." in parts[1]
    invariants("cut", ids)
