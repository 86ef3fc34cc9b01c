"""The summarize task end to end: a real in-process worker, PostgreSQL, Redis and
the real SDK against the local Messages API server."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

import pytest

from recap.api.ingest import add_message
from recap.testing import FakeAnthropic, Reply, error, ok
from recap.worker.celery_app import app
from tests.helpers import (
    LOW,
    message_ids,
    run_and_wait,
    runs,
    seed,
    session_row,
    statuses,
    wait_for,
)
from tests.helpers import assert_invariants as check_all

pytestmark = pytest.mark.usefixtures("celery_worker_thread")

LEASE_HELD = "lease held by another job"


def queue(sid: str) -> None:
    """Publish one summarize job by name (nothing imports recap.worker.tasks)."""
    app.send_task("recap.tasks.summarize_session", (sid,))


@pytest.fixture(autouse=True)
def low_thresholds(settings_env: Callable[..., None]) -> None:
    settings_env(**LOW)


def assert_invariants(written: dict[str, list[int]]) -> None:
    def idle(sid: str) -> bool:
        row = session_row(sid)
        return row is None or (row.lease_token is None and row.enqueued_at is None)

    for sid in written:  # follow-up jobs may still be running
        wait_for(functools.partial(idle, sid), what=f"{sid} idle")
    check_all(written)


def test_exact_rows_deleted_and_counters_exact(fake_api: FakeAnthropic) -> None:
    ids = seed("exact", 12)
    seed("other", 12)  # another session is never touched
    run_and_wait("exact")
    assert statuses("exact") == ["applied"]
    assert message_ids("exact") == ids[5:]
    row = session_row("exact")
    assert row is not None and row.summary_version == 1 and row.rolling_summary
    assert row.summarized_message_count == 5 and row.lease_token is None
    run = runs("exact")[0]
    assert (run.first_message_id, run.last_message_id, run.messages_condensed) == (ids[0],
                                                                                    ids[4], 5)
    assert run.input_tokens and run.output_tokens and run.model and run.latency_ms is not None
    assert len(message_ids("other")) == 12
    assert_invariants({"exact": ids})


def test_previous_summary_is_sent_and_folded(fake_api: FakeAnthropic) -> None:
    ids = seed("fold", 12)
    fake_api.script(ok("The user planned a launch for March 14th."))
    run_and_wait("fold")
    ids += seed("fold", 5)
    fake_api.script(ok("The user planned a launch for March 14th and a $2,400 budget."))
    run_and_wait("fold", n=2)
    assert "The user planned a launch for March 14th." in fake_api.prompts()[1]
    row = session_row("fold")
    assert row is not None and row.summary_version == 2
    assert row.rolling_summary == "The user planned a launch for March 14th and a $2,400 budget."
    assert_invariants({"fold": ids})


def test_failure_changes_nothing(fake_api: FakeAnthropic) -> None:
    ids = seed("fail", 12)
    fake_api.always(error(500))
    run_and_wait("fail", final={"dead"})
    assert statuses("fail") == ["failed", "failed", "failed", "dead"]
    assert [r.attempt for r in runs("fail")] == [1, 2, 3, 4]
    assert message_ids("fail") == ids
    row = session_row("fail")
    assert row is not None
    assert row.rolling_summary is None and row.summary_version == 0 and row.lease_token is None
    assert row.blocked_until is not None  # dead-lettered: the sweeper waits for the cool-down
    assert all("InternalServerError" in (r.error or "") or "500" in (r.error or "")
               for r in runs("fail"))
    assert_invariants({"fail": ids})


def test_message_written_during_the_call_survives(fake_api: FakeAnthropic) -> None:
    ids = seed("during", 12)
    gate = fake_api.hold()
    queue("during")
    gate.wait_entered()  # the job holds the lease and its call is in flight
    late = add_message("during", "user", "A message written while Claude was thinking.")
    gate.release()
    wait_for(lambda: "applied" in statuses("during"), what="apply")
    assert statuses("during") == ["applied"]
    assert message_ids("during") == ids[5:] + [late]
    row = session_row("during")
    assert row is not None and row.message_count == 8 and row.summarized_message_count == 5
    assert_invariants({"during": [*ids, late]})


def test_two_concurrent_tasks_apply_once(fake_api: FakeAnthropic) -> None:
    ids = seed("twice", 12)
    gate = fake_api.hold()
    queue("twice")
    gate.wait_entered()  # the first job holds the lease during its call
    queue("twice")
    wait_for(lambda: "skipped" in statuses("twice"), what="the second job's run")
    assert [(r.status, r.reason) for r in runs("twice")] == [("skipped", LEASE_HELD)]
    gate.release()
    wait_for(lambda: "applied" in statuses("twice"), what="the first job's apply")
    assert statuses("twice") == ["skipped", "applied"]
    assert len(fake_api.requests) == 1
    assert message_ids("twice") == ids[5:]
    assert_invariants({"twice": ids})


def test_transient_errors_retried_then_applied(fake_api: FakeAnthropic) -> None:
    ids = seed("flaky", 12)
    fake_api.script(error(429, headers={"retry-after": "0"}), error(529, "Overloaded"),
                    Reply("reset"), ok())
    run_and_wait("flaky")
    assert statuses("flaky") == ["failed", "failed", "failed", "applied"]
    assert "RateLimitError" in (runs("flaky")[0].error or "")
    assert message_ids("flaky") == ids[5:]
    assert_invariants({"flaky": ids})


def test_permanent_error_not_retried(fake_api: FakeAnthropic) -> None:
    from tests.env import API_KEY

    ids = seed("auth", 12)
    fake_api.always(error(401, "invalid x-api-key"))
    run_and_wait("auth")
    assert statuses("auth") == ["dead"]
    assert len(fake_api.requests) == 1
    run = runs("auth")[0]
    assert "AuthenticationError" in (run.error or "") and "401" in (run.error or "")
    assert API_KEY not in (run.error or "")
    assert message_ids("auth") == ids
    assert_invariants({"auth": ids})


@pytest.mark.parametrize("bad", [ok(""), ok("The user ...", stop_reason="max_tokens")])
def test_an_empty_or_cut_off_answer_is_asked_again_another_way_in_the_same_job(
        fake_api: FakeAnthropic, bad: Reply) -> None:
    ids = seed("empty", 12)
    fake_api.script(bad, ok("A proper summary."))
    run_and_wait("empty")
    [run] = runs("empty")
    assert run.status == "applied" and run.frozen_answers == 1
    assert "unusable plain answer, asked again as fresh" in (run.reason or "")
    row = session_row("empty")
    assert row is not None and row.rolling_summary == "A proper summary."
    assert message_ids("empty") == ids[5:]  # the batch (RECAP_BATCH_SIZE=5) is gone


@pytest.mark.parametrize("bad", [ok(""), ok("The user ...", stop_reason="max_tokens")])
def test_empty_or_truncated_every_way_is_kept_extractively(fake_api: FakeAnthropic,
                                                           bad: Reply) -> None:
    ids = seed("bad", 12)
    # Every way of asking answers badly: the batch is kept extractively, not retried.
    fake_api.script(bad, bad, ok("A proper summary."))
    run_and_wait("bad")
    [run] = runs("bad")
    assert run.status == "applied" and run.fallback
    assert "UnusableSummary" in (run.reason or "")
    assert run.input_tokens  # what the failed calls cost is still recorded
    row = session_row("bad")
    assert row is not None and "A proper summary." not in (row.rolling_summary or "")
    assert_invariants({"bad": ids})


def test_giant_message_is_chunked(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_LLM_MAX_INPUT_TOKENS=6000)
    ids = [add_message("giant", "user", " ".join(f"w{i}" for i in range(20000)))]
    ids += seed("giant", 11)
    # The giant message fills a job's token cap alone; a follow-up takes the rest.
    run_and_wait("giant", n=2, final={"applied"})
    first, follow_up = runs("giant")
    assert (first.status, first.messages_condensed) == ("applied", 1)
    assert (follow_up.status, follow_up.messages_condensed) == ("applied", 5)
    # The follow-up's five short messages take one request: the first job's
    # input was split into several.
    assert len(fake_api.requests) >= 3
    assert message_ids("giant") == ids[6:]
    assert_invariants({"giant": ids})


def test_unknown_session_is_skipped_with_reason() -> None:
    run_and_wait("nobody")
    [run] = runs("nobody")
    assert (run.status, run.reason) == ("skipped", "session 'nobody' not found")


def test_a_session_below_thresholds_is_skipped_with_reason(fake_api: FakeAnthropic) -> None:
    ids = seed("small", 6)
    run_and_wait("small")
    [run] = runs("small")
    assert run.status == "skipped"
    assert (run.reason or "").startswith("below thresholds: 6 messages"), run.reason
    assert fake_api.requests == [] and message_ids("small") == ids
    assert_invariants({"small": ids})


def test_duplicate_deliveries_are_harmless(fake_api: FakeAnthropic) -> None:
    ids = seed("dup", 12)
    gate = fake_api.hold()
    threads = [threading.Thread(target=queue, args=("dup",)) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gate.wait_entered()
    # The first delivery holds the lease until released: the nine others skip meanwhile.
    wait_for(lambda: statuses("dup").count("skipped") == 9, what="nine skipped runs")
    assert {r.reason for r in runs("dup")} == {LEASE_HELD}
    gate.release()
    wait_for(lambda: "applied" in statuses("dup"), what="the apply")
    assert statuses("dup").count("applied") == 1 and len(statuses("dup")) == 10
    assert len(fake_api.requests) == 1
    assert message_ids("dup") == ids[5:]
    assert_invariants({"dup": ids})
