"""Recall from the archive through the public API (sync and asyncio): a real fold
archives a tool result, a later user turn names its identifier, and build_context
quotes the archived line after the last cache breakpoint, the cached prefix
unchanged; then retention and erasure of the archive."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from recap.core.context.assemble import EPHEMERAL, Context, system_text
from recap.core.context.lookback import RECALL_OPEN, RECALL_TAG
from recap.db import transaction, utcnow
from recap.llm.tokens import count_tokens
from recap.models import ArchivedMessage
from recap.sessions.forget import forget
from recap.settings import get_settings
from recap.worker.jobs.expire import purge_archive
from tests.api.common import Api, assert_valid
from tests.helpers import LOW, run_and_wait, sentence

pytestmark = pytest.mark.usefixtures("celery_worker_thread")

PROMPT = "You are a careful coding assistant."
# The specific and its neighbour (the path on the next line), deep in a tool result.
LOG = ("collected 40 items\n" + "\n".join(f"tests/test_{i}.py ....... ok" for i in range(30))
       + "\nERROR LGR-3621 raised at:\n  src/ledger/loader.py:212\n"
       + "\n".join(f"teardown step {i} done" for i in range(30)))
# The line naming the code and the path on the next one, as quoted (indented).
NAMED_AND_NEXT = re.compile(r"ERROR LGR-3621 raised at:\n +src/ledger/loader\.py:212\n")
# Keep what a fold condenses out of the summary: the test is about the archive.
QUIET = {**LOW, "RECAP_RETENTION_GUARD": "false", "RECAP_EXTRACT_MEMORIES": "false"}


def folded_session(api: Api, sid: str, *, ask: bool = True) -> None:
    """A session whose first batch (holding LOG as a tool result) was folded by the
    worker into the archive, then (``ask``) a user turn asking about LGR-3621."""
    api.add_message(sid, "user", "Run the ledger tests please.")
    api.add_message(sid, "assistant", [{"type": "tool_use", "id": "toolu_1", "name": "pytest",
                                        "input": {"args": "tests/"}}])
    api.add_message(sid, "user", [{"type": "tool_result", "tool_use_id": "toolu_1",
                                   "content": LOG}])
    for i in range(9):
        api.add_message(sid, "assistant" if i % 2 == 0 else "user", sentence(i, 30))
    run_and_wait(sid)
    with transaction() as s:
        assert s.scalar(select(func.count()).select_from(ArchivedMessage)
                        .where(ArchivedMessage.session_id == sid)) == 5
    if ask:
        api.add_message(sid, "user", "Where was LGR-3621 raised?")


def recall_block(ctx: Context) -> str:
    last = ctx["messages"][-1]["content"]
    assert isinstance(last, list)
    marked = [i for i, b in enumerate(last) if "cache_control" in b]
    [found] = [b["text"] for b in last if b.get("text", "").startswith(RECALL_OPEN)]
    assert last.index(next(b for b in last if b.get("text") == found)) > marked[-1]
    return str(found)


def cached_prefix(ctx: Context) -> str:
    """Everything up to the last cache breakpoint, as bytes would be sent."""
    *head, last = ctx["messages"]
    upto = []
    for b in last["content"]:
        upto.append(b)
        if b.get("cache_control") == EPHEMERAL:
            break
    return json.dumps([ctx["system"], head, upto], sort_keys=True)


def test_a_turn_naming_an_archived_identifier_recalls_its_line(
        api: Api, settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET)
    sid = f"recall-{api.name}"
    folded_session(api, sid)
    ctx = api.build_context(sid, system_prompt=PROMPT)
    assert "LGR-3621 raised at" not in system_text(ctx["system"])  # the fold dropped it
    block = recall_block(ctx)
    assert NAMED_AND_NEXT.search(block)
    assert "[tool result · message " in block
    assert " UTC] output of [tool call pytest (toolu_1): {\"args\": \"tests/\"}]" in block
    assert ctx["tokens"] <= ctx["budget"]
    assert_valid(ctx)
    # What went in, counted as it was assembled: the first fold's summary, the lines
    # recalled (each quoted under its own "[tool result · message ..." label).
    quoted = block.count("[tool result · message ")
    assert ctx["parts"] == {"summary": True, "summary_version": 1, "details": False,
                            "memories": 0, "recalled": quoted, "withheld": 0}

    settings_env(**QUIET, RECAP_RECALL_TOKENS=0)
    without = api.build_context(sid, system_prompt=PROMPT)
    assert RECALL_TAG not in json.dumps(without)
    assert without["parts"]["recalled"] == 0
    assert cached_prefix(without) == cached_prefix(ctx)
    assert without["tokens"] < ctx["tokens"]

    settings_env(**QUIET, RECAP_PROMPT_CACHING="false", RECAP_RECALL_TOKENS=600)
    plain = api.build_context(sid, system_prompt=PROMPT)
    assert isinstance(plain["system"], str) and plain["system"].endswith(f"</{RECALL_TAG}>")


def test_nothing_is_recalled_for_a_turn_naming_only_what_the_context_holds(
        api: Api, settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET)
    sid = f"no-recall-{api.name}"
    folded_session(api, sid)
    api.add_message(sid, "assistant", "Let me check.")
    api.add_message(sid, "user", "What was the teardown about, again?")
    ctx = api.build_context(sid, system_prompt=PROMPT)
    assert RECALL_TAG not in json.dumps(ctx)  # one plain word: never recalled alone


def test_delete_only_mode_archives_nothing_and_recalls_nothing(
        api: Api, settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET, RECAP_ARCHIVE_SUMMARIZED="false")
    sid = f"delete-only-{api.name}"
    api.add_message(sid, "user", "Run the tests. " + LOG)
    for i in range(11):
        api.add_message(sid, "assistant" if i % 2 == 0 else "user", sentence(i, 30))
    run_and_wait(sid)
    api.add_message(sid, "user", "Where was LGR-3621 raised?")
    with transaction() as s:
        assert s.scalar(select(func.count()).select_from(ArchivedMessage)) == 0
    assert RECALL_TAG not in json.dumps(api.build_context(sid, system_prompt=PROMPT))


# Retention and forget are not part of the reply path: the sync API only.
@pytest.mark.parametrize("api", ["sync"], indirect=True)
def test_retention_and_forget_delete_the_archive(
        api: Api, settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET, RECAP_ARCHIVE_RETENTION_DAYS=30)
    folded_session(api, "kept")
    folded_session(api, "old")
    with transaction() as s:
        s.execute(update(ArchivedMessage).where(ArchivedMessage.session_id == "old")
                  .values(archived_at=utcnow() - timedelta(days=31)))
    assert purge_archive(get_settings(), now=utcnow(), batch=2, batches=2) == 4
    assert purge_archive(get_settings(), now=utcnow(), batch=2, batches=2) == 1
    settings_env(**QUIET, RECAP_ARCHIVE_RETENTION_DAYS=0)
    assert purge_archive(get_settings(), now=utcnow() + timedelta(days=9999)) == 0
    assert RECALL_TAG not in json.dumps(api.build_context("old", system_prompt=PROMPT))

    counts = forget(session_id="kept")
    assert counts["archived_messages"] == 5
    with transaction() as s:
        assert s.scalar(select(func.count()).select_from(ArchivedMessage)) == 0


def test_a_window_that_fills_the_budget_makes_room_for_the_recalled_line(
        api: Api, settings_env: Callable[..., None]) -> None:
    """Long turns after the fold fill the budget: the oldest of them are left out of
    this request (never the newest RECAP_KEEP_RECENT), so the line the question
    names is quoted within the budget; they stay stored."""
    settings_env(**QUIET)
    sid = f"recall-room-{api.name}"
    folded_session(api, sid, ask=False)
    for i in range(4):
        api.add_message(sid, "assistant" if i % 2 == 0 else "user", sentence(i, 260))
    api.add_message(sid, "user", "Where was LGR-3621 raised?")
    settings_env(**{**QUIET, "RECAP_KEEP_RECENT": 2}, RECAP_CONTEXT_BUDGET_TOKENS=1200)
    ctx = api.build_context(sid, system_prompt=PROMPT)
    assert NAMED_AND_NEXT.search(recall_block(ctx))
    assert ctx["parts"]["withheld"] > 0 and ctx["tokens"] <= ctx["budget"]
    texts = [json.dumps(m["content"]) for m in ctx["messages"]]
    # The newest RECAP_KEEP_RECENT rows are kept: two user rows, one turn.
    assert "Where was LGR-3621 raised?" in texts[-1] and sentence(3, 260) in texts[-1]
    assert_valid(ctx)
    # Without recall nothing asks for room: the whole window, as stored.
    settings_env(**{**QUIET, "RECAP_KEEP_RECENT": 2}, RECAP_CONTEXT_BUDGET_TOKENS=1200,
                 RECAP_RECALL_TOKENS=0)
    whole = api.build_context(sid, system_prompt=PROMPT)
    assert whole["parts"]["withheld"] == 0 and whole["tokens"] > whole["budget"]


# The window holds it, so recall does not look it up: leaving it out would lose it.
NAMED = "The staging database is db-7731.internal on port 5433."
BOTH = "Where was LGR-3621 raised, and which port does db-7731.internal use?"


def test_withholding_keeps_the_message_the_newest_turn_names(
        api: Api, settings_env: Callable[..., None]) -> None:
    """The oldest message after the fold holds what the question names besides the
    archived error code: the long turns after it are left out, it stays."""
    settings_env(**QUIET)
    sid = f"recall-named-{api.name}"
    folded_session(api, sid, ask=False)
    api.add_message(sid, "assistant", NAMED)
    for i in range(4):
        api.add_message(sid, "user" if i % 2 == 0 else "assistant", sentence(i, 260))
    api.add_message(sid, "user", BOTH)
    settings_env(**{**QUIET, "RECAP_KEEP_RECENT": 2}, RECAP_CONTEXT_BUDGET_TOKENS=1100)
    ctx = api.build_context(sid, system_prompt=PROMPT)
    block = recall_block(ctx)  # a passage keeps the log's own indentation
    assert re.search(r"ERROR LGR-3621 raised at:\n\s+src/ledger/loader\.py:212", block)
    assert ctx["parts"]["withheld"] >= 3 and ctx["tokens"] <= ctx["budget"]
    texts = [json.dumps(m["content"]) for m in ctx["messages"]]
    assert any(NAMED in t for t in texts) and not any(sentence(0, 260) in t for t in texts)
    assert_valid(ctx)


def test_a_named_message_too_big_to_keep_is_quoted_in_the_recall_block(
        api: Api, settings_env: Callable[..., None]) -> None:
    """Kept whole it would not fit beside the newest turns: its line is quoted first
    in the recall block instead, labelled with its message id."""
    settings_env(**QUIET)
    sid = f"recall-named-big-{api.name}"
    folded_session(api, sid, ask=False)
    named_id = api.add_message(sid, "assistant", "\n".join(
        [sentence(1, 400), NAMED, sentence(2, 400)]))
    api.add_message(sid, "user", sentence(3, 40))
    api.add_message(sid, "assistant", sentence(4, 40))
    api.add_message(sid, "user", BOTH)
    settings_env(**{**QUIET, "RECAP_KEEP_RECENT": 2}, RECAP_CONTEXT_BUDGET_TOKENS=1100)
    ctx = api.build_context(sid, system_prompt=PROMPT)
    block = recall_block(ctx)
    assert block.startswith(f"{RECALL_OPEN}- [assistant · message {named_id}] {NAMED}")
    assert "ERROR LGR-3621 raised at:" in block and ctx["parts"]["recalled"] == 2
    assert ctx["parts"]["withheld"] >= 1 and ctx["tokens"] <= ctx["budget"]
    assert not any(sentence(1, 400) in json.dumps(m["content"]) for m in ctx["messages"])
    assert_valid(ctx)


def test_short_turns_left_out_leave_the_recall_block_its_room(
        api: Api, settings_env: Callable[..., None]) -> None:
    """Hundreds of short turns fill the budget: whichever of them the window then
    starts with, the placeholder opening it is counted, so the recall block keeps
    the room computed for it and the context stays within the budget."""
    settings_env(**QUIET)
    sid = f"recall-short-{api.name}"
    folded_session(api, sid, ask=False)
    for i in range(400):
        api.add_message(sid, "assistant" if i % 2 == 0 else "user", f"noted, step {i}")
    api.add_message(sid, "user", "Where was LGR-3621 raised?")
    starts = set()
    for budget in range(1100, 1108):
        settings_env(**QUIET, RECAP_CONTEXT_BUDGET_TOKENS=budget)
        ctx = api.build_context(sid, system_prompt=PROMPT)
        assert ctx["parts"]["withheld"] > 200, budget
        assert "ERROR LGR-3621 raised at:" in recall_block(ctx), (budget, ctx["parts"])
        assert ctx["tokens"] <= budget
        assert_valid(ctx)
        starts.add(json.dumps(ctx["messages"][0]["content"]).startswith('"(earlier'))
    assert starts == {True, False}  # both shapes of the window's start were built


# A file read: the error code near its top, where it is raised and the fixture hash
# pinned with it 20-30 lines further down, filler around them.
READ = "\n".join(
    ["# ledger fixtures", "ERRORS = {", "    'E-4471': 'balance mismatch',", "}"]
    + [f"def helper_{i}(x):\n    return x + {i}" for i in range(12)]
    + ["def load_ledger(path):", "    if mismatch(path):",
       "        raise LedgerError('E-4471')  # tests/fixtures/ledger.py:88",
       "FIXTURE_SHA = '9f2c1e7ab41d'  # fixture hash pinned for the E-4471 runs"]
    + [f"def tail_{i}():\n    return {i}" for i in range(120)])
TABLE = "\n".join(["| day | region | metric | value |"] + [
    f"| 2026-11-{d:02d} | {r} | {m} | {v} |" for d in range(10, 18)
    for r in ("APAC", "EMEA", "AMER") for m, v in
    (("revenue", "9,100"), ("refunds", "1,200" if (d, r) == (14, "APAC") else "310"))])


def folded_output(api: Api, sid: str, output: str, *, tool: str, args: dict[str, str]
                  ) -> None:
    """A session whose first batch (a tool call and its ``output``) was folded."""
    api.add_message(sid, "user", "Look into the failing ledger run please.")
    api.add_message(sid, "assistant", [{"type": "tool_use", "id": "toolu_7", "name": tool,
                                        "input": args}])
    api.add_message(sid, "user", [{"type": "tool_result", "tool_use_id": "toolu_7",
                                   "content": output}])
    for i in range(9):
        api.add_message(sid, "assistant" if i % 2 == 0 else "user", sentence(i, 30))
    run_and_wait(sid)


def test_recall_quotes_the_passage_a_later_turn_is_about_with_the_call_it_answers(
        api: Api, settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET)
    sid = f"passage-{api.name}"
    folded_output(api, sid, READ, tool="read_file", args={"path": "tests/fixtures/ledger.py"})
    # Another spelling of the code, the words of the question in other forms.
    api.add_message(sid, "user", "Where does e4471 get raised, and which fixture hash "
                                 "did we pin with it?")
    ctx = api.build_context(sid, system_prompt=PROMPT)
    block = recall_block(ctx)
    assert "raise LedgerError('E-4471')  # tests/fixtures/ledger.py:88" in block
    assert "FIXTURE_SHA = '9f2c1e7ab41d'" in block
    assert ('output of [tool call read_file (toolu_7): {"path": "tests/fixtures/ledger.py"}]'
            in block)
    assert "def tail_90" not in block  # the passage, not the whole read
    assert count_tokens(block) <= get_settings().recall_tokens
    assert ctx["tokens"] <= ctx["budget"]
    assert_valid(ctx)


def test_a_reference_in_the_users_own_words_finds_the_row_that_answers_it(
        api: Api, settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET)
    sid = f"own-words-{api.name}"
    folded_output(api, sid, TABLE, tool="query", args={"sql": "select * from daily"})
    api.add_message(sid, "user", "What was the refunds figure for APAC on the 14th?")
    block = recall_block(api.build_context(sid, system_prompt=PROMPT))
    assert "| 2026-11-14 | APAC | refunds | 1,200 |" in block
    assert 'output of [tool call query (toolu_7): {"sql": "select * from daily"}]' in block


def test_a_code_a_later_turn_names_still_recalls_what_its_output_said_besides(
        api: Api, settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET)
    sid = f"held-{api.name}"
    folded_output(api, sid, READ, tool="read_file", args={"path": "tests/fixtures/ledger.py"})
    api.add_message(sid, "assistant", "The run hit E-4471; I'll keep going.")
    api.add_message(sid, "user", "Going back to E-4471: where was it raised, and which "
                                 "fixture hash was pinned with it?")
    ctx = api.build_context(sid, system_prompt=PROMPT)
    block = recall_block(ctx)
    assert "FIXTURE_SHA = '9f2c1e7ab41d'" in block and "tests/fixtures/ledger.py:88" in block
    assert_valid(ctx)
    # Naming it again and asking nothing else of it recalls nothing.
    api.add_message(sid, "assistant", "Noted.")
    api.add_message(sid, "user", "Fine, E-4471 it is.")
    assert RECALL_TAG not in json.dumps(api.build_context(sid, system_prompt=PROMPT))
