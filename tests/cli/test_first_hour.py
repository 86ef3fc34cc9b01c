"""The first hour: what a new user meets in the ``recap`` commands.

Why a session is not summarized yet (``recap context``/``stats``/``sessions``),
``recap summarize --force``, titles made visible (ingest, stats, failures,
sessions), the help texts, ``| head`` without a traceback, and
``recap tokenizer export`` for offline machines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from recap import db
from recap.errors import PermanentLLMError
from recap.models import ChatSession, TitleRun
from recap.testing import error, ok
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.titles import title_session
from tests.cli.common import (
    no_title_runs,  # noqa: F401
    run,
)
from tests.env import FAKE
from tests.helpers import message_ids, runs, seed, statuses, wait_for


def set_title(session_id: str, title: str) -> None:
    with db.transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == session_id).values(title=title))


# -- why not summarized yet, and --force ---------------------------------------------

def test_context_keeps_stdout_json_and_explains_on_stderr(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    seed("few", 8)
    set_title("few", "Lisbon offsite")
    code, out, err = run(capsys, "context", "few")
    assert code == 0, err
    assert len(json.loads(out)["messages"]) == 8  # stdout is only the context
    lines = err.splitlines()
    assert lines[0].startswith('few "Lisbon offsite": 8 messages, ')
    assert lines[0].endswith("of the 32000-token budget")
    assert lines[1] == "  not summarized yet: 8 messages, not over 10"
    assert lines[2].startswith("  next summary: over 10 messages (3 more) with a candidate "
                               "batch over 100 tokens")
    assert "or the context reaching 80% of the 32000-token budget" in lines[2]
    assert lines[3] == ("  now: recap summarize few --force condenses the 4 oldest messages "
                        f"({_tokens('few', 4)} tokens)")

    code, out, err = run(capsys, "context", "few", "--quiet")
    assert (code, err) == (0, "") and json.loads(out)


def _tokens(session_id: str, n: int) -> int:
    from recap.models import ChatMessage

    with db.transaction() as s:
        return sum(s.scalars(select(ChatMessage.token_count)
                             .where(ChatMessage.session_id == session_id)
                             .order_by(ChatMessage.id).limit(n)))


def test_summarize_force_condenses_the_candidate_batch_recorded_as_forced(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    ids = seed("few", 8)
    code, out, _ = run(capsys, "summarize", "few", "--now")  # no rule fires: skipped
    assert code == 0 and json.loads(out)["status"] == "skipped"
    assert str(runs("few")[-1].reason).startswith("below thresholds: 8 messages")

    code, out, err = run(capsys, "summarize", "few", "--force")
    assert code == 0, err
    outcome = json.loads(out)
    assert outcome["status"] == "applied" and outcome["messages_condensed"] == 4
    assert outcome["reason"].startswith("forced: below thresholds: 8 messages")
    assert message_ids("few") == ids[4:]  # the 4 outside the keep window went
    assert statuses("few") == ["skipped", "applied"]
    assert runs("few")[-1].reason == outcome["reason"]

    # What is left is all keep window: forcing again condenses nothing, and says why.
    code, out, _ = run(capsys, "summarize", "few", "--force")
    skipped = json.loads(out)
    assert skipped["status"] == "skipped"
    assert "nothing outside the keep window can be condensed" in skipped["reason"]


def test_a_due_session_is_not_forced_and_says_so(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    seed("due", 12)
    _, _, err = run(capsys, "context", "due")
    assert "  due now: normal: 12 messages > 10" in err
    assert "the hook queues it after the next assistant reply" in err
    code, out, _ = run(capsys, "summarize", "due", "--force")
    assert code == 0 and json.loads(out)["reason"].startswith("normal:")  # the rule, not forced


def test_sixty_short_messages_on_the_defaults_say_what_triggers_the_next_fold(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The first hour on the defaults (the adaptive policy): 60 ordinary messages are
    below the session's high-water mark, and stats says where it is and why."""
    seed("chat", 60, words=12)
    code, out, err = run(capsys, "stats")
    assert code == 0, err
    assert "the largest session (by active tokens), and what triggers the next summary:" in out
    assert "chat (untitled): 60 messages, " in out
    assert "below the high-water mark: about " in out
    assert re.search(r"the context passing the high-water mark of \d+ tokens \(\d+ more", out)

    code, out, _ = run(capsys, "stats", "--json")
    (top,) = json.loads(out)["largest_sessions"]
    assert (top["session_id"], top["state"]) == ("chat", "below-high-water")


def test_sixty_short_messages_under_the_fixed_rule_wait_for_capacity(
        settings_env: Callable[..., None], capsys: pytest.CaptureFixture[str]) -> None:
    """RECAP_POLICY=threshold with its default thresholds: 60 ordinary messages never
    reach the normal rule's token trigger, and stats says so."""
    settings_env(RECAP_POLICY="threshold")
    seed("chat", 60, words=12)
    code, out, err = run(capsys, "stats")
    assert code == 0, err
    assert "chat (untitled): 60 messages, " in out
    assert "normal rule cannot fire before the next summary" in out
    assert re.search(r"next summary: the context reaching 80% of the 32000-token budget "
                     r"\(\d+ more tokens\)", out)
    assert "now: recap summarize chat --force condenses the 20 oldest messages" in out

    code, out, _ = run(capsys, "stats", "--json")
    (top,) = json.loads(out)["largest_sessions"]
    assert (top["session_id"], top["state"], top["forced_messages"]) == \
        ("chat", "normal-blocked", 20)

    code, out, _ = run(capsys, "summarize", "chat", "--force")
    assert json.loads(out)["messages_condensed"] == 20
    assert str(runs("chat")[-1].reason).startswith("forced: below thresholds: 60 messages")


def test_stats_top_zero_and_sessions_list(low: None, capsys: pytest.CaptureFixture[str]) -> None:
    seed("big", 12, words=60)
    seed("small", 3)
    set_title("small", "Quick question")
    code, out, _ = run(capsys, "stats", "--top", "0")
    assert code == 0 and "largest sessions" not in out
    assert json.loads(run(capsys, "stats", "--json", "--top", "0")[1])["largest_sessions"] == []

    code, out, err = run(capsys, "sessions")
    assert code == 0, err
    header, first, second = out.splitlines()
    assert header.split() == ["SESSION", "MESSAGES", "TOKENS", "CONTEXT", "SUMMARY", "STATE",
                              "TITLE"]
    assert first.split()[:2] == ["big", "12"] and first.split()[5:] == ["due", "(untitled)"]
    assert second.split()[:2] == ["small", "3"] and second.endswith("few-messages  Quick question")
    items = json.loads(run(capsys, "sessions", "--json", "--limit", "1")[1])
    assert [(i["session_id"], i["title"], i["state"]) for i in items] == [("big", None, "due")]


def test_sessions_when_there_are_none(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "sessions") == (0, "no sessions with active messages\n", "")


# -- titles: queued, counted, failed, shown -------------------------------------------------

def exchange(session_id: str) -> list[str]:
    return [json.dumps({"session_id": session_id, "role": role, "content": text})
            for role, text in (("user", "Our nginx returns 502s after the deploy. Why?"),
                               ("assistant", "Probably the upstream timeout."))]


@pytest.mark.usefixtures("celery_worker_thread")
def test_ingest_counts_title_jobs_and_stats_shows_their_tokens(
        settings_env: Callable[..., None], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(RECAP_TITLES_ENABLED="true")
    FAKE.script(ok("Nginx 502s after a deploy"), ok("Nginx 502s after a deploy"))
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(exchange("t1") + exchange("t2")) + "\n", encoding="utf-8")

    code, out, err = run(capsys, "ingest", str(path))

    assert code == 0, err
    assert out == "added 4, bad 0, summarize jobs queued 0, title jobs queued 2\n"
    wait_for(lambda: _count(TitleRun.status == "titled") == 2, what="both title runs")
    data = json.loads(run(capsys, "stats", "--json")[1])
    requests = [r for r in FAKE.requests if r["max_tokens"] < 100]  # the two title calls
    assert len(requests) == 2
    assert (data["sessions_titled"], data["title_runs"], data["title_failures"]) == (2, 2, 0)
    assert data["title_input_tokens"] > 0 and data["title_output_tokens"] > 0
    assert data["api_input_tokens"] == 0  # summary usage is counted apart
    _, text, _ = run(capsys, "stats")
    assert re.search(r"API input tokens \(titles\) +\d+", text)
    _, listing, _ = run(capsys, "sessions")
    assert listing.count("Nginx 502s after a deploy") == 2


def _count(condition: Any) -> int:
    with db.transaction() as s:
        return len(list(s.scalars(select(TitleRun.id).where(condition))))


def test_a_failed_title_call_is_in_failures_and_stats(capsys: pytest.CaptureFixture[str]) -> None:
    seed("untitled", 2)
    FAKE.always(error(401, "invalid x-api-key"))
    with pytest.raises(PermanentLLMError):
        title_session("untitled", res=get_resources())
    FAKE.always(None)

    code, out, err = run(capsys, "failures")
    assert code == 0, err
    assert "failed  title      session=untitled" in out
    assert "AuthenticationError 401" in out
    (item,) = json.loads(run(capsys, "failures", "--json")[1])
    assert (item["job"], item["status"], item["session_id"]) == ("title", "failed", "untitled")
    data = json.loads(run(capsys, "stats", "--json")[1])
    assert (data["title_runs"], data["title_failures"], data["sessions_titled"]) == (1, 1, 0)

    FAKE.script(ok("Named at last"))
    assert title_session("untitled", res=get_resources()) == "Named at last"
    _, _, err = run(capsys, "context", "untitled")
    assert err.startswith('untitled "Named at last": 2 messages')
