"""Model output the database cannot store: NULs and lone
surrogates in a summary, a title or a mined fact are sanitised before they are
stored, so the apply never dies on them; and an error of Recap's own code is
never taken for an API failure. Real worker, PostgreSQL and the real SDK against
the local Messages API server."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from recap.api.ingest import add_message
from recap.sessions.overrides import memories
from recap.testing import FakeAnthropic, ok
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.titles import title_session
from tests.helpers import (
    LOW,
    assert_invariants,
    message_ids,
    run_and_wait,
    runs,
    seed,
    session_row,
    statuses,
)

# What the model "says": the fake serialises with json.dumps, so these go out as
# the escapes \u0000 and \ud800, and the SDK's JSON parser turns them back into
# a real NUL and a lone surrogate.
DIRTY_SUMMARY = "The user\x00 planned a trip to Lisbon \ud800 in March."
CLEAN_SUMMARY = "The user planned a trip to Lisbon \ufffd in March."


@pytest.mark.unit
def test_the_sdk_hands_back_a_real_nul_and_a_lone_surrogate(fake_api: FakeAnthropic) -> None:
    # The premise of the tests below: what the fake sends is what a model can send.
    fake_api.script(ok(DIRTY_SUMMARY))
    config = get_resources().client
    assert config is not None
    response = config.client.messages.create(
        model=config.model, max_tokens=64, messages=[{"role": "user", "content": "hi"}])
    assert response.content[0].text == DIRTY_SUMMARY
    assert "\x00" in response.content[0].text and "\ud800" in response.content[0].text


@pytest.mark.usefixtures("celery_worker_thread")
def test_a_summary_with_a_nul_and_a_lone_surrogate_is_applied(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**LOW)
    ids = seed("dirty", 12)
    fake_api.script(ok(DIRTY_SUMMARY))
    run_and_wait("dirty", final={"applied", "dead"})
    assert statuses("dirty") == ["applied"], runs("dirty")[0].error
    row = session_row("dirty")
    assert row is not None and row.rolling_summary == CLEAN_SUMMARY
    assert message_ids("dirty") == ids[5:]
    assert_invariants({"dirty": ids})


@pytest.mark.usefixtures("celery_worker_thread")
def test_a_mined_fact_with_an_escaped_nul_is_stored(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_EXTRACT_MEMORIES="true")
    ids = seed("facts", 12)
    # JSON escapes inside the answer text: real NUL / lone surrogate only once
    # Recap parses the facts.
    answer = ('{"summary": "The user talked about drinks.", "facts": [{"fact": '
              '"The user likes \\u0000 tea \\ud800 with milk.", "category": "preference", '
              '"importance": 4}]}')
    assert "\\u0000" in json.dumps(answer)  # the tool input carries the escapes
    fake_api.script(ok(answer))
    run_and_wait("facts", final={"applied", "dead"})
    assert statuses("facts") == ["applied"], runs("facts")[0].error
    assert [m["fact"] for m in memories("facts")] == ["The user likes tea \ufffd with milk."]
    assert_invariants({"facts": ids})


@pytest.mark.parametrize(("answer", "title"), [
    ("Trip\x00 to Lisbon", "Trip to Lisbon"),
    ("Trip to \ud800Lisbon", "Trip to \ufffdLisbon"),
])
def test_a_title_with_a_nul_or_a_lone_surrogate_is_stored(
        fake_api: FakeAnthropic, answer: str, title: str) -> None:
    add_message("titled", "user", "Book me a hotel in Lisbon for March.")
    add_message("titled", "assistant", "Booked: Hotel Avenida, March 14th to 18th.")
    fake_api.script(ok(answer))
    assert title_session("titled", res=get_resources()) == title
    row = session_row("titled")
    assert row is not None and row.title == title


def test_a_json_error_in_our_own_code_is_not_an_api_failure(
        fake_api: FakeAnthropic, settings_env: Callable[..., None],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSONDecodeError raised by Recap itself (here: while storing the memories) is
    a bug to see, not a malformed API response to retry as transient."""
    from recap.worker.jobs import summarize as job

    settings_env(**LOW)
    ids = seed("ours", 12)

    def broken(*_: object, **__: object) -> object:
        return json.loads("{not json")

    monkeypatch.setattr(job, "apply_summary", broken)
    with pytest.raises(json.JSONDecodeError):
        job.summarize("ours", job=Job(task_id="t-ours", final_attempt=False),
                      res=get_resources())
    (run,) = runs("ours")
    assert run.status == "dead"  # not retried as if the API had failed
    assert (run.error or "").startswith("JSONDecodeError: "), run.error
    assert "TransientLLMError" not in (run.error or "")
    assert message_ids("ours") == ids
