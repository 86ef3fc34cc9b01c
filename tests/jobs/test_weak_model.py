"""Retention against a weak model, through the public API and a real worker: the
stand-in misbehaves on demand (recap.testing.Weak) the way a small model did."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import asdict
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from recap.api.ingest import add_message, after_reply
from recap.cli.stats import format_stats
from recap.core.prompts.titles import TITLE_MAX_TOKENS, TITLE_RETRY_MAX_TOKENS
from recap.core.retention import guard
from recap.core.retention.entries import MAX_ENTRY_CHARS, is_prefix, peel
from recap.core.retention.repairs import REPAIR_MIN_TRIES, RepairOutcome, should_repair
from recap.db import transaction, utcnow
from recap.models import ChatSession, Memory, TitleRun
from recap.ops.stats import collect_stats
from recap.settings import get_settings
from recap.store.enqueue import send_title
from recap.store.runs import RunRecord, record_run
from recap.testing import (
    FakeAnthropic,
    Reply,
    Request,
    Weak,
    error,
    ok,
    recap_kind,
    weak_model,
)
from recap.worker.jobs.claim import POISON_WAITS
from tests.checks import check_invariants
from tests.helpers import LOW, run_and_wait, runs, session_row, statuses, wait_for
from tests.jobs.test_scenarios import conversation, idle

pytestmark = pytest.mark.usefixtures("celery_worker_thread")

GUARDED = {**LOW, "RECAP_RETENTION_GUARD": "true", "RECAP_EXTRACT_MEMORIES": "true",
           "RECAP_MAX_SUMMARY_TOKENS": 300}


def feed(sid: str, messages: list[tuple[str, str]]) -> dict[int, str]:
    """Write ``messages``, the hook after each reply, waiting for the worker; their texts."""
    texts = {}
    for role, text in messages:
        texts[add_message(sid, role, text)] = text
        if role == "assistant":
            after_reply(sid)
            wait_for(lambda: idle(sid), timeout=60, what="worker caught up")
    return texts


def memories() -> dict[str, int | None]:
    with transaction() as s:
        return {m.fact: m.superseded_by for m in s.scalars(select(Memory))}


def details(summary: str) -> list[str]:
    """The lines of the summary's details section, under any of its headers (read
    here, not by the guard)."""
    out: list[str] = []
    inside = False
    for ln in summary.split("\n"):
        if ln in guard.DETAILS_HEADERS.values():
            inside = True
        elif inside and ln.startswith("- "):
            out.append(ln[2:])
        else:
            inside = False
    return out


def one_prefix_deep(line: str) -> bool:
    head, sep, rest = line.partition(": ")
    if sep and is_prefix(head):
        return peel(rest) == rest.strip()
    return peel(line) == line.strip()


def test_details_and_guard_memories_never_stack_prefixes(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    # A tiny details section, so specifics overflow to memories too.
    settings_env(**GUARDED, RECAP_DETAILS_SHARE=0.2)
    fake_api.lose_specifics(0.8, seed=4)
    sid = "stacking"
    feed(sid, conversation(80))
    applied = [r for r in runs(sid) if r.status == "applied"]
    assert len(applied) >= 8
    row = session_row(sid)
    assert row is not None and row.rolling_summary
    lines = details(row.rolling_summary)
    made = [f for f in memories() if ": " in f and is_prefix(f.partition(": ")[0])]
    assert lines and made
    for line in [*lines, *made]:
        assert one_prefix_deep(line), line
        assert len(line) <= MAX_ENTRY_CHARS, line


def test_a_junk_replacement_never_drops_a_saved_specific(fake_api: FakeAnthropic,
                                                         settings_env: Callable[..., None]) -> None:
    settings_env(**GUARDED)
    sid = "junk"
    first = [("user", "FACT: The tracking number of my parcel is 1Z999AA10123456784."),
             ("assistant", "Noted, I will keep the tracking number.")]
    feed(sid, first + conversation(14))
    saved = [f for f in memories() if "1Z999AA10123456784" in f]
    assert saved, "the fact was mined as a memory"
    fake_api.route(weak_model(Weak(junk_replaces=True)))
    feed(sid, conversation(40)[14:])
    assert any(r.status == "applied" for r in runs(sid)[1:])
    prompts = [p for p in fake_api.prompts() if "<known_facts>" in p]
    assert any("1Z999AA10123456784" in p for p in prompts), "it was offered as known"
    now = memories()
    assert any(now[f] is None for f in saved), "the tracking number is still live"


def test_an_echoed_schema_is_no_specific_and_leaves_the_summary(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**GUARDED)
    fake_api.route(weak_model(Weak(echo_schema=True)))
    sid = "echo"
    feed(sid, [("user", "We land on 3 March 2025 at 9:30 am, flight TP1357."),
               ("assistant", "Noted: 3 March 2025, 9:30 am, TP1357.")] + conversation(30))
    assert "applied" in statuses(sid)
    row = session_row(sid)
    assert row is not None and row.rolling_summary
    assert "at most 300 tokens" not in row.rolling_summary
    kept = [*details(row.rolling_summary), *memories()]
    assert not any(k == "300" or k.startswith("300:") for k in kept), kept
    assert not any("at most 300 tokens" in k for k in kept), kept
    assert not any(k in ("3", "2025") or k.startswith(("3:", "2025:")) for k in kept), kept



def title_runs(sid: str) -> list[tuple[str, str | None]]:
    with transaction() as s:
        return [(r.status, r.error) for r in s.scalars(
            select(TitleRun).where(TitleRun.session_id == sid).order_by(TitleRun.id))]


LONG_TITLE = ("Planning the Lisbon offsite in March with flights, hotels, the budget and the "
              "conference schedule for the whole team, and who pays for the dinner on Friday")


def test_a_cut_off_title_is_retried_once_with_a_larger_cap(fake_api: FakeAnthropic) -> None:
    fake_api.route(weak_model(Weak(title=LONG_TITLE)))
    add_message("t1", "user", "Help me plan the Lisbon offsite in March.")
    add_message("t1", "assistant", "Sure: flights, hotels, budget and the schedule.")
    assert send_title("t1")
    wait_for(lambda: title_runs("t1"), what="the title run")
    assert [r["max_tokens"] for r in fake_api.requests] == [TITLE_MAX_TOKENS,
                                                              TITLE_RETRY_MAX_TOKENS]
    row = session_row("t1")
    assert row is not None and row.title is not None
    assert row.title.startswith("Planning the Lisbon offsite in March")


def test_a_title_echoing_the_instruction_is_rejected_and_none_is_kept(
        fake_api: FakeAnthropic) -> None:
    echo = "3 to 7 words, in the same language as the conversation"
    fake_api.route(weak_model(Weak(title=echo)))
    add_message("t2", "user", "Help me plan the Lisbon offsite in March.")
    add_message("t2", "assistant", "Sure: flights, hotels, budget and the schedule.")
    assert send_title("t2")
    wait_for(lambda: title_runs("t2"), what="the title run")
    [(status, error)] = title_runs("t2")
    assert status == "failed" and "repeats the instruction" in (error or "")
    assert len(fake_api.requests) == 2  # the retry, then no more: not retried again
    row = session_row("t2")
    assert row is not None and row.title is None


def test_runaway_facts_keep_their_summary_and_are_asked_alone(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**GUARDED)
    fake_api.route(weak_model(Weak(loop_facts=True)))
    sid = "runaway"
    texts = {add_message(sid, role, text): text for role, text in conversation(12)}
    run_and_wait(sid, final={"applied", "dead"})
    [run] = runs(sid)  # applied on the first attempt: no retry of the same request
    assert run.status == "applied" and not run.fallback, run.error
    reason = run.reason or ""
    assert "the summary kept, the facts asked alone" in reason
    assert "facts answer cut off: dropped" in reason
    # Only what was cut is asked again: the facts, without the summary.
    tools = [(r.get("tool_choice") or {}).get("name") for r in fake_api.requests
             if recap_kind(r) != "repair"]
    assert tools == ["record_summary", "record_facts"]
    assert run.resends == 1 and run.resend_input_tokens
    with transaction() as s:
        assert check_invariants(s, written={sid: list(texts)},
                                written_texts={sid: texts}) == []


def test_a_fallback_summary_cut_off_too_is_asked_again_as_the_new_messages_own(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    # A small model that runs away on the summary-and-facts call and again on the
    # plain summary it is then asked for: the same job asks a third way (the new
    # messages alone) instead of giving the session up.
    settings_env(**GUARDED)
    plain_asked: list[Request] = []

    def runaway_plain_once(request: Request) -> Reply | None:
        if request.tool is None and recap_kind(request.body) == "summary":
            plain_asked.append(request)
            if len(plain_asked) == 1:
                return ok("The user and the assistant talked about " * 40,
                          stop_reason="max_tokens")
        return None

    def runaway_summary(request: Request) -> Reply | None:
        # The summary itself runs away: nothing of the answer can be kept.
        if request.tool == "record_summary":
            return ok('{"facts": []}', stop_reason="max_tokens")
        return None

    fake_api.route(runaway_plain_once)
    fake_api.route(runaway_summary)
    fake_api.route(weak_model(Weak(loop_facts=True)))
    sid = "runaway-twice"
    # A batch too small to split.
    short = [f"message {i} about the Lisbon trip in March, flights and hotels. " * 3
             for i in range(12)]
    texts = {add_message(sid, "user" if i % 2 == 0 else "assistant", text): text
             for i, text in enumerate(short)}
    run_and_wait(sid, final={"applied", "dead"})
    [run] = runs(sid)
    assert run.status == "applied", run.error
    reason = run.reason or ""
    assert "summary-only fallback" in reason
    assert "unusable plain answer, asked again as fresh" in reason
    assert (run.frozen_answers or 0) >= 1
    assert len(plain_asked) >= 2
    with transaction() as s:
        assert check_invariants(s, written={sid: list(texts)},
                                written_texts={sid: texts}) == []


def test_a_deterministic_runaway_is_not_asked_again_the_same_way(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**{**GUARDED, "RECAP_EXTRACT_MEMORIES": "false"})
    fake_api.always(ok("", stop_reason="max_tokens"))  # a deterministic runaway
    sid = "deterministic"
    ids = [add_message(sid, role, text) for role, text in conversation(12)]
    run_and_wait(sid, final={"applied", "dead"})
    [run] = runs(sid)
    # Kept extractively in the same job, not retried: the first fold's third way
    # (the new messages alone) is the same request, so it is asked with twice the
    # room; cut off again, no way is left.
    assert run.status == "applied" and run.fallback, run.error
    assert "kept extractively" in (run.reason or "")
    caps = [r["max_tokens"] for r in fake_api.requests]
    assert caps == [get_settings().max_summary_tokens, 2 * get_settings().max_summary_tokens]
    with transaction() as s:
        assert check_invariants(s, written={sid: ids}) == []


def useless_repair(request: Request) -> Reply | None:
    """A model whose repair answer is the summary it was given, unchanged."""
    if recap_kind(request.body) != "repair":
        return None
    found = re.search(r"<summary>\n(.*?)\n</summary>", request.prompt, re.S)
    return ok(html.unescape(found.group(1)) if found else "The summary.")


def test_repairs_that_never_help_stop_being_called(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**{**GUARDED, "RECAP_EXTRACT_MEMORIES": "false"})
    fake_api.lose_specifics(0.7, seed=12)
    fake_api.route(useless_repair)
    sid = "useless-repair"
    texts = feed(sid, conversation(120))
    applied = [r for r in runs(sid) if r.status == "applied"]
    missing = [r for r in applied if r.specifics_missing_before_repair]
    assert len(missing) > REPAIR_MIN_TRIES + 3
    called = [r for r in missing if r.repaired]
    assert len(called) >= REPAIR_MIN_TRIES
    assert all(r.specifics_missing_after == r.specifics_missing_before_repair for r in called)
    # After REPAIR_MIN_TRIES calls that never helped, repair is skipped, but for
    # a probe now and then: exactly the calls should_repair allows on this history.
    expected: list[bool] = []
    for _ in missing:
        history = [RepairOutcome(c, False) for c in reversed(expected)]
        expected.append(should_repair(history))
    assert [bool(r.repaired) for r in missing] == expected
    assert [bool(r.repair_skipped) for r in missing] == [not e for e in expected]
    assert expected[REPAIR_MIN_TRIES] is False
    with transaction() as s:  # the details section and memories kept everything
        assert check_invariants(s, written={sid: list(texts)},
                                written_texts={sid: texts}) == []
    with transaction() as s:
        stats = collect_stats(db=s, settings=get_settings(), now=utcnow())
    assert stats.repair_success_rate == 0.0
    assert stats.repair_input_tokens > 0 and stats.repair_output_tokens > 0
    assert stats.repairs_skipped == expected.count(False)
    shown = format_stats(asdict(stats))
    assert "repair calls that helped" in shown and "0.0%" in shown


def test_a_dead_lettered_session_still_gets_its_aggressive_fold(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    budget = 6000
    settings_env(**{**GUARDED, "RECAP_EXTRACT_MEMORIES": "false",
                    "RECAP_CONTEXT_BUDGET_TOKENS": budget})
    # The fold fails for good below capacity (an unusable answer would be kept
    # extractively instead: tests/jobs/test_fallback.py).
    fake_api.always(error(400, "messages: bad"))
    sid = "over-budget"
    messages = conversation(200)
    for role, text in messages[:12]:
        add_message(sid, role, text)
    run_and_wait(sid, final={"applied", "dead"})
    assert statuses(sid) == ["dead"]
    with transaction() as s:  # recap stats says why the session is blocked
        [(reason, count)] = collect_stats(db=s, settings=get_settings(),
                                          now=utcnow()).blocked_reasons.items()
    assert count == 1 and "400" in reason
    fake_api.always(None)  # the model behaves again; the session is still cooling down

    def usage() -> float:
        row = session_row(sid)
        assert row is not None
        return (row.summary_tokens + row.active_tokens) / budget

    for role, text in messages[12:]:
        add_message(sid, role, text)
        after_reply(sid)
        if usage() > 0.95:
            break
    assert usage() > 0.95, "the conversation filled the context"
    wait_for(lambda: "applied" in statuses(sid), timeout=60, what="the aggressive fold")
    applied = next(r for r in runs(sid) if r.status == "applied")
    assert (applied.reason or "").startswith("aggressive")
    row = session_row(sid)
    assert row is not None and row.blocked_until is None
    assert usage() <= 0.95


def test_a_session_dead_lettered_by_a_lost_worker_waits_even_over_budget(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    # The aggressive exception is for a model's failure only: a session whose worker
    # died on it (a poison session) is not run again during its cool-down.
    settings_env(**{**GUARDED, "RECAP_EXTRACT_MEMORIES": "false",
                    "RECAP_CONTEXT_BUDGET_TOKENS": 6000})
    sid = "poison"
    for role, text in conversation(40):
        add_message(sid, role, text)
    with transaction() as s:
        record_run(RunRecord(
            session_id=sid, task_id="t", attempt=1, status="dead",
            reason="worker lost 4 times in a row while holding this session's lease"), db=s)
        s.execute(update(ChatSession).where(ChatSession.id == sid)
                  .values(blocked_until=utcnow() + timedelta(hours=1)))
    after_reply(sid)  # over budget: the hook sends the aggressive job
    wait_for(lambda: "skipped" in statuses(sid), timeout=60, what="the claim's verdict")
    assert runs(sid)[-1].reason == POISON_WAITS
    assert fake_api.requests == []  # no call was made
    row = session_row(sid)
    assert row is not None and row.blocked_until is not None
