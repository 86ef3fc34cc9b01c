"""Retries that pay for themselves, and a session no model can fold kept in budget,
through a real worker and the fake Messages API misbehaving on purpose: resends
counted and bounded (RECAP_MAX_RESENDS), the facts' answer room capped
(RECAP_MAX_FACTS_TOKENS), a capped request never made again, and a batch no way of
asking could fold kept extractively, labelled, with nothing lost."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import asdict

import pytest
from sqlalchemy import select

from recap.api.context import build_context
from recap.cli.stats import format_stats
from recap.core.context.assemble import system_text
from recap.core.planning import resends
from recap.core.prompts.summarize import NO_PREVIOUS
from recap.core.retention.extractive import HEADER
from recap.db import transaction, utcnow
from recap.models import ArchivedMessage
from recap.ops.stats import collect_stats
from recap.settings import get_settings
from recap.testing import FakeAnthropic, Reply, Request, Weak, error, ok, recap_kind, weak_model
from tests.checks import check_invariants
from tests.helpers import LOW, message_ids, run_and_wait, runs, seed, session_row, wait_for
from tests.jobs.test_scenarios import conversation, idle
from tests.jobs.test_weak_model import feed

pytestmark = pytest.mark.usefixtures("celery_worker_thread")

GUARDED = {**LOW, "RECAP_RETENTION_GUARD": "true", "RECAP_EXTRACT_MEMORIES": "true",
           "RECAP_ARCHIVE_SUMMARIZED": "true"}
_PREVIOUS = re.compile(r"<previous_summary>\n(.*?)\n</previous_summary>", re.S)


def previous_of(request: Request) -> str:
    found = _PREVIOUS.search(request.prompt)
    return html.unescape(found.group(1)) if found else NO_PREVIOUS


def echo_everywhere(request: Request) -> Reply | None:
    """A small model that answers every update, tool or plain, with the summary it
    was given; the new messages alone (no previous summary) it summarizes."""
    if recap_kind(request.body) != "summary" or previous_of(request) == NO_PREVIOUS:
        return None
    previous = previous_of(request)
    if request.tool == "record_summary":
        return ok(json.dumps({"summary": previous, "facts": []}))
    return ok(previous) if request.tool is None else None


def unusable(request: Request) -> Reply | None:
    """No summary any way: a tool answer without one, a plain answer cut off at its cap."""
    if recap_kind(request.body) != "summary":
        return None
    if request.tool == "record_summary":
        return ok('{"facts": []}')
    return ok("The user and the assistant talked about", stop_reason="max_tokens")


def requests_of(fake: FakeAnthropic) -> list[tuple[str, int, str | None]]:
    """Each request as the model reads it: prompt, cap, forced tool."""
    return [(json.dumps(r["messages"]), r["max_tokens"], (r.get("tool_choice") or {}).get("name"))
            for r in fake.requests]


def stats_now() -> dict[str, object]:
    with transaction() as s:
        return asdict(collect_stats(db=s, settings=get_settings(), now=utcnow()))


def archived(sid: str) -> list[int]:
    with transaction() as s:
        return list(s.scalars(select(ArchivedMessage.id).where(ArchivedMessage.session_id == sid)
                              .order_by(ArchivedMessage.id)))


def test_resends_are_counted_with_their_tokens(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**GUARDED)
    fake_api.route(echo_everywhere)
    sid = "resends"
    feed(sid, conversation(24))
    applied = [r for r in runs(sid) if r.status == "applied"]
    assert len(applied) >= 2
    assert applied[0].resends is None  # the first fold has nothing to echo
    for run in applied[1:]:
        # tool (frozen) -> plain (frozen) -> the new messages alone: two resends.
        assert run.resends == 2 and run.frozen_answers == 2, run.reason
        assert 0 < (run.resend_input_tokens or 0) < (run.input_tokens or 0)
        assert not run.fallback
    # The third way sends the new messages alone, never the previous summary.
    fresh = [r for r in fake_api.requests if "record_summary" not in json.dumps(r)
             and recap_kind(r) == "summary" and NO_PREVIOUS in json.dumps(r["messages"])]
    assert len(fresh) >= len(applied) - 1
    stats = stats_now()
    assert stats["resends"] == sum(r.resends or 0 for r in runs(sid))
    assert stats["resend_input_tokens"] == sum(r.resend_input_tokens or 0 for r in runs(sid))
    assert "batches sent again after an unusable answer" in format_stats(stats)


def test_resends_are_bounded_and_the_batch_is_kept_extractively_past_the_bound(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**GUARDED, RECAP_MAX_RESENDS=1)
    fake_api.route(echo_everywhere)
    sid = "bounded"
    texts = feed(sid, conversation(24))
    later = [r for r in runs(sid) if r.status == "applied"][1:]
    assert later
    for run in later:
        assert run.resends == 1 and run.fallback, run.reason  # the plain way, then no more
        assert "RECAP_MAX_RESENDS=1" in (run.reason or "")
    with transaction() as s:
        assert check_invariants(s, written={sid: list(texts)},
                                written_texts={sid: texts}) == []


def test_a_model_unusable_every_way_is_kept_extractively_and_asked_again_next_fold(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**GUARDED)
    fake_api.route(unusable)
    sid = "unusable"
    ids = seed(sid, 12)
    run_and_wait(sid)
    [run] = runs(sid)
    assert run.status == "applied" and run.fallback, run.error
    assert "kept extractively" in (run.reason or "")
    # Nothing lost: every deleted row is in the archive, and the summary says
    # (labelled) what the model could not.
    gone = sorted(set(ids) - set(message_ids(sid)))
    assert gone and gone == archived(sid) and run.messages_condensed == len(gone)
    row = session_row(sid)
    assert row is not None and HEADER in (row.rolling_summary or "").split("\n")
    assert row.summary_tokens <= get_settings().max_summary_tokens
    context = build_context(sid, system_prompt="You are helpful.", prompt_caching=False)
    assert HEADER in system_text(context["system"])
    stats = stats_now()
    assert stats["extractive_folds"] == 1
    assert "folds kept extractively (no usable answer)" in format_stats(stats)
    with transaction() as s:
        assert check_invariants(s, written={sid: ids}) == []

    # The model works again: the next fold asks it.
    fake_api.reset()
    more = seed(sid, 6)
    asked = len(fake_api.requests)
    run_and_wait(sid, n=2)
    last = runs(sid)[-1]
    assert last.status == "applied" and not last.fallback, last.reason
    assert len(fake_api.requests) > asked
    with transaction() as s:
        assert check_invariants(s, written={sid: ids + more}) == []


def test_a_model_whose_folds_keep_failing_is_asked_once_until_a_probe(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**GUARDED)
    fake_api.route(unusable)
    sid = "failing"
    texts = feed(sid, conversation(40))
    folds = [r for r in runs(sid) if r.status == "applied"]
    assert len(folds) > resends.FALLBACK_STREAK and all(r.fallback for r in folds)
    # tool -> plain -> the new messages alone: two resends, until a streak...
    streak = folds[:resends.FALLBACK_STREAK]
    assert [r.resends for r in streak] == [2] * len(streak)
    # ...after which each fold asks the model once, and says why, but for a probe
    # with full resends after PROBE_EVERY - 1 of them.
    for i, run in enumerate(folds[resends.FALLBACK_STREAK:], start=1):
        if i % resends.PROBE_EVERY == 0:
            assert run.resends == 2, run.reason
        else:
            assert not run.resends and run.frozen_answers == 1, run.reason
            assert "resends withheld: the model's last" in (run.reason or "")
    with transaction() as s:
        assert check_invariants(s, written={sid: list(texts)},
                                written_texts={sid: texts}) == []

    # The model works again: the next fold, asked once, gets a usable answer.
    fake_api.reset()
    feed(sid, conversation(12))
    last = [r for r in runs(sid) if r.status == "applied"][-1]
    assert not last.fallback, last.reason


def test_exhausted_retries_at_capacity_fold_extractively_under_budget(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**GUARDED, RECAP_CONTEXT_BUDGET_TOKENS=1000, RECAP_MAX_SUMMARY_TOKENS=200,
                 RECAP_MAX_RETRIES=1, RECAP_MEMORY_BUDGET_TOKENS=0)
    sid = "overloaded"
    ids = seed(sid, 20)  # about 1,000 tokens: at capacity
    fake_api.always(error(529, "Overloaded"))
    run_and_wait(sid, final={"applied", "dead"})
    wait_for(lambda: idle(sid), timeout=60, what="follow-ups done")
    first = [r.status for r in runs(sid)][:2]
    assert first == ["failed", "applied"]  # a retry first, then kept extractively
    folded = [r for r in runs(sid) if r.status == "applied"]
    assert all(r.fallback for r in folded) and "529" in (folded[0].reason or "")
    row = session_row(sid)
    assert row is not None
    assert row.summary_tokens + row.active_tokens < 1000
    assert row.blocked_until is None  # not dead-lettered
    with transaction() as s:
        assert check_invariants(s, written={sid: ids}) == []


def test_the_facts_room_follows_its_setting(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**GUARDED, RECAP_MAX_FACTS_TOKENS=200, RECAP_MAX_SUMMARY_TOKENS=300)
    sid = "facts-cap"
    seed(sid, 12)
    run_and_wait(sid)
    tool_calls = [r for r in fake_api.requests
                  if (r.get("tool_choice") or {}).get("name") == "record_summary"]
    assert tool_calls and all(r["max_tokens"] == 300 + 200 for r in tool_calls)


def test_a_capped_answer_is_never_asked_again_the_same_way(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**GUARDED)
    # Every summary-and-facts answer runs to its cap; the chunk is too small to split.
    fake_api.route(weak_model(Weak(loop_facts=True)))
    sid = "capped"
    ids = seed(sid, 12, words=20)
    run_and_wait(sid)
    [run] = runs(sid)
    assert run.status == "applied", run.error
    asked = requests_of(fake_api)
    assert len(asked) == len(set(asked)), "a request was made again with the same cap"
    # After the cut-off facts, only the facts are asked again, in less room, without
    # the summary or the previous one.
    kinds = [tool for _, _, tool in asked]
    assert kinds[0] == "record_summary" and "record_facts" in kinds
    facts = [cap for _, cap, tool in asked if tool == "record_facts"]
    assert facts and facts[-1] < asked[0][1]
    assert kinds.count("record_summary") == 1
    assert (run.resends or 0) >= 1 and run.resend_input_tokens
    with transaction() as s:
        assert check_invariants(s, written={sid: ids}) == []
