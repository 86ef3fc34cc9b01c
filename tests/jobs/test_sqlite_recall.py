"""Recall on the embedded default: the archive is searched through its FTS5 table
(kept by triggers), with the same choice of lines as on PostgreSQL."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from sqlalchemy import func, select, text

from recap import db
from recap.api.context import build_context
from recap.api.ingest import add_message
from recap.core.context.lookback import RECALL_TAG
from recap.sessions.forget import forget
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from tests.api.test_recall_db import LOG
from tests.helpers import sentence
from tests.jobs.test_sqlite import sqlite_url

pytestmark = pytest.mark.unit

__all__ = ["sqlite_url"]  # the fixture, used by name below



def test_recall_reads_the_fts5_table_and_forget_empties_it(
        sqlite_url: str, settings_env: Callable[..., None]) -> None:
    settings_env(DATABASE_URL=sqlite_url, RECAP_POLICY="threshold", RECAP_TRIGGER_MESSAGES=10,
                 RECAP_TRIGGER_TOKENS=100, RECAP_BATCH_SIZE=5, RECAP_KEEP_RECENT=4,
                 RECAP_RETENTION_GUARD="false", RECAP_EXTRACT_MEMORIES="false")
    add_message("lite", "user", "Run the ledger tests please.")
    add_message("lite", "assistant", [{"type": "tool_use", "id": "toolu_1", "name": "pytest",
                                       "input": {"args": "tests/"}}])
    add_message("lite", "user", [{"type": "tool_result", "tool_use_id": "toolu_1",
                                  "content": LOG}])
    for i in range(9):
        add_message("lite", "assistant" if i % 2 == 0 else "user", sentence(i, 30))
    assert summarize("lite", job=Job(task_id="t-lite"), res=get_resources()).status == "applied"
    add_message("lite", "user", "Where was LGR-3621 raised?")
    ctx = build_context("lite", system_prompt="")
    recalled = [b["text"] for b in ctx["messages"][-1]["content"]
                if b["text"].startswith(f"<{RECALL_TAG}>")]
    assert len(recalled) == 1
    assert re.search(r"LGR-3621 raised at:\n +src/ledger/loader\.py:212", recalled[0])
    forget(session_id="lite")
    with db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(text("archived_messages_fts"))) == 0
    assert RECALL_TAG not in json.dumps(ctx["system"])


def test_a_cleared_tool_result_is_recalled_from_the_fts5_table(
        sqlite_url: str, settings_env: Callable[..., None]) -> None:
    from tests.jobs.test_clear_tool_results import QUIET, agent_session

    settings_env(DATABASE_URL=sqlite_url, **QUIET)
    agent_session("lite-clear")
    assert summarize("lite-clear", job=Job(task_id="t-lite-clear"),
                     res=get_resources()).status == "skipped"  # cleared; no fold due
    ctx = build_context("lite-clear", system_prompt="")
    assert "[tool output cleared by Recap: " in json.dumps(ctx["messages"])
    add_message("lite-clear", "user", "What caused ERR-4421?")
    ctx = build_context("lite-clear", system_prompt="")
    recalled = [b["text"] for b in ctx["messages"][-1]["content"]
                if b["text"].startswith(f"<{RECALL_TAG}>")]
    assert len(recalled) == 1 and "ERR-4421 in src/api/handler2.py" in recalled[0]


def test_a_two_million_character_tool_result_clears_and_is_recalled_whole(
        sqlite_url: str, settings_env: Callable[..., None]) -> None:
    """FTS5 has no tsvector limit: the embedded default indexes the whole text, and
    keeps no search terms."""
    from recap.models import ArchivedMessage
    from tests.jobs.test_clear_tool_results import QUIET, big_result_session, dump

    settings_env(DATABASE_URL=sqlite_url, **QUIET)
    result = dump(2_000_000)
    written = big_result_session("lite-huge", result)
    assert summarize("lite-huge", job=Job(task_id="t-lite-huge"),
                     res=get_resources()).status == "skipped"
    with db.transaction() as s:
        text_, terms = s.execute(select(ArchivedMessage.search_text, ArchivedMessage.search_terms)
                                 .where(ArchivedMessage.id == written[2])).one()
    assert text_ is not None and result in text_ and terms is None
    add_message("lite-huge", "user", "What was the quantity of sku0110000?")
    ctx = build_context("lite-huge", system_prompt="")
    recalled = [b["text"] for b in ctx["messages"][-1]["content"]
                if b["text"].startswith(f"<{RECALL_TAG}>")]
    assert len(recalled) == 1 and "sku0110000 qty" in recalled[0], recalled
