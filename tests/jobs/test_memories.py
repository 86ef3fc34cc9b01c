"""Memory extraction: mined in the same job before the rows go; JSON handling."""

from __future__ import annotations

import json

import pytest

from worker.evals.fake_api import FakeAnthropic, error, ok
from tests.helpers import LOW, message_ids, run_and_wait, runs, seed, statuses
from worker.api.ingest import add_message
from worker.api.sessions import memories
from worker.checks import check_invariants
from worker.cli import main as recap
from worker.core.memories import parse_facts
from worker.db import transaction
from worker.errors import InvalidExtraction

EXTRACTING = {**LOW, "RECAP_EXTRACT_MEMORIES": "true"}

pytestmark = pytest.mark.usefixtures("celery_worker_thread")


@pytest.fixture(autouse=True)
def extraction_on(settings_env) -> None:  # type: ignore[no-untyped-def]
    settings_env(**EXTRACTING)


def facts_json(*facts: tuple[str, str, object]) -> str:
    return json.dumps([{"fact": f, "category": c, "importance": i} for f, c, i in facts])


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


def test_valid_json_is_stored_with_the_batch_range(fake_api: FakeAnthropic) -> None:
    ids = seed("mem", 12)
    fake_api.script(ok("The user planned a trip."),
                    ok(facts_json(("The user is vegetarian.", "preference", 4))))
    run("mem")
    assert statuses("mem") == ["applied"]
    [m] = memories("mem")
    assert (m["fact"], m["category"], m["importance"]) == ("The user is vegetarian.",
                                                           "preference", 4)
    assert (m["first_message_id"], m["last_message_id"]) == (ids[0], ids[4])
    assert "extract durable facts" in fake_api.requests[1]["system"]
    assert "<conversation>" in fake_api.requests[1]["messages"][0]["content"]
    invariants("mem", ids)


def test_invalid_then_valid_json_is_retried_once_with_a_stricter_instruction(
        fake_api: FakeAnthropic) -> None:
    ids = seed("strict", 12)
    fake_api.script(ok("Summary."), ok("Here you go: the user likes tea"),
                    ok(facts_json(("The user likes tea.", "preference", 2))))
    run("strict")
    assert statuses("strict") == ["applied"]
    assert "ONLY the JSON array" in fake_api.requests[2]["messages"][0]["content"]
    assert [m["fact"] for m in memories("strict")] == ["The user likes tea."]
    invariants("strict", ids)


def test_always_invalid_json_fails_the_job_and_loses_nothing(fake_api: FakeAnthropic) -> None:
    ids = seed("nojson", 12)
    fake_api.always(ok("not json at all"))
    run("nojson")
    assert statuses("nojson") == ["failed", "failed", "failed", "dead"]
    assert "InvalidExtraction" in (runs("nojson")[0].error or "")
    assert message_ids("nojson") == ids  # nothing deleted before extraction succeeded
    assert memories("nojson") == []
    invariants("nojson", ids)


def test_extraction_failure_is_retried_and_later_applied(fake_api: FakeAnthropic) -> None:
    ids = seed("later", 12)
    fake_api.script(ok("Summary."), error(529, "Overloaded"), ok("Summary."),
                    ok(facts_json(("The user's budget is $2,400.", "fact", 3))))
    run("later")
    assert statuses("later") == ["failed", "applied"]
    assert len(memories("later")) == 1
    invariants("later", ids)


def test_duplicates_across_jobs_are_stored_once(fake_api: FakeAnthropic) -> None:
    ids = seed("dedupe", 12)
    same = facts_json(("The user is called Ana.", "personal", 3))
    fake_api.script(ok("S1."), ok(same))
    run("dedupe")
    ids += seed("dedupe", 5)
    fake_api.script(ok("S2."), ok(same))
    run_and_wait("dedupe", n=2, final={"applied"})
    assert [m["fact"] for m in memories("dedupe")] == ["The user is called Ana."]
    invariants("dedupe", ids)


def test_disabled_extraction_never_blocks_the_summary(fake_api: FakeAnthropic,
                                                      settings_env) -> None:  # type: ignore[no-untyped-def]
    settings_env(**LOW, RECAP_EXTRACT_MEMORIES="false")
    ids = seed("off", 12)
    run("off")
    assert statuses("off") == ["applied"] and len(fake_api.requests) == 1
    invariants("off", ids)


def test_recap_memories_prints_them(fake_api: FakeAnthropic, capsys) -> None:  # type: ignore[no-untyped-def]
    add_message("cli-mem", "user", "FACT: The user prefers dark mode.")  # in the first batch
    seed("cli-mem", 11)
    run("cli-mem")
    assert recap(["memories", "cli-mem"]) == 0
    assert "[3] fact       The user prefers dark mode." in capsys.readouterr().out
    assert recap(["memories", "nobody"]) == 1


# -- issue 11, item 8: the answer cap follows the chunk; a cut-off answer splits it --

def test_the_answer_cap_grows_with_the_chunk(fake_api: FakeAnthropic) -> None:
    from worker.llm.extractor import MIN_ANSWER_TOKENS

    ids = seed("rich", 12, words=1000)  # a 5-message batch of ~6,500 tokens
    run("rich")
    assert statuses("rich") == ["applied"]
    extract = fake_api.requests[1]
    assert "extract durable facts" in extract["system"]
    assert extract["max_tokens"] > MIN_ANSWER_TOKENS  # a quarter of the chunk
    invariants("rich", ids)


def test_a_cut_off_answer_splits_the_chunk_instead_of_failing(fake_api: FakeAnthropic) -> None:
    ids = seed("cut", 12, words=120)  # a 5-message batch of ~800 tokens
    fake_api.script(ok("Summary."),
                    ok('[{"fact": "The user is vegetarian.", "category": "pref',
                       stop_reason="max_tokens"),
                    ok(facts_json(("The user is vegetarian.", "preference", 4))),
                    ok(facts_json(("The user lives in Lisbon.", "personal", 3))))
    run("cut")
    assert statuses("cut") == ["applied"]
    assert sorted(m["fact"] for m in memories("cut")) == ["The user is vegetarian.",
                                                          "The user lives in Lisbon."]
    whole, first, second = (r["messages"][0]["content"] for r in fake_api.requests[1:4])
    assert "ONLY the JSON array" not in first + second  # split, not retried as bad JSON
    assert first.count("<message role=") + second.count("<message role=") \
        == whole.count("<message role=") == 5
    assert len(fake_api.requests) == 4
    invariants("cut", ids)
