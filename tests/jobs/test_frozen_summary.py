"""A frozen summary (the previous one back, the new messages ignored), through a real
worker: refused before anything is deleted, asked again the plain way, counted in
the audit row and in ``recap stats``."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import asdict

import pytest

from recap.cli.stats import format_stats
from recap.db import transaction, utcnow
from recap.ops.stats import collect_stats
from recap.settings import get_settings
from recap.testing import FakeAnthropic, Reply, Request, ok
from tests.helpers import LOW, runs, session_row
from tests.jobs.test_scenarios import conversation
from tests.jobs.test_weak_model import feed

pytestmark = pytest.mark.usefixtures("celery_worker_thread")

GUARDED = {**LOW, "RECAP_RETENTION_GUARD": "true", "RECAP_EXTRACT_MEMORIES": "true"}


def echo_in_tool(request: Request) -> Reply | None:
    """A small model: its record_summary answer is the summary it was given."""
    if request.tool != "record_summary":
        return None
    found = re.search(r"<previous_summary>\n(.*?)\n</previous_summary>", request.prompt, re.S)
    previous = html.unescape(found.group(1)) if found else "(none yet)"
    if previous == "(none yet)":
        return None
    return ok(json.dumps({"summary": previous, "facts": []}))


def test_a_frozen_tool_answer_is_asked_again_as_plain_text_and_counted(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**GUARDED)
    fake_api.route(echo_in_tool)
    sid = "frozen"
    feed(sid, conversation(40))
    applied = [r for r in runs(sid) if r.status == "applied"]
    assert len(applied) >= 3
    assert applied[0].frozen_answers is None  # the first fold has nothing to echo
    later = applied[1:]
    assert all(r.frozen_answers == 1 for r in later)
    assert all("frozen tool answer, asked again as plain" in (r.reason or "") for r in later)
    # Each later fold's summary came from the plain call and the facts from their own.
    tools = [(r.get("tool_choice") or {}).get("name") for r in fake_api.requests]
    assert tools.count("record_facts") >= len(later)
    row = session_row(sid)
    assert row is not None and row.rolling_summary
    with transaction() as s:
        stats = collect_stats(db=s, settings=get_settings(), now=utcnow())
    assert stats.frozen_answers == len(later)
    assert "summary answers refused as frozen or empty" in format_stats(asdict(stats))


def test_plain_mode_asks_for_the_summary_as_text_and_the_facts_apart(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**GUARDED, RECAP_SUMMARY_MODE="plain")
    sid = "plain"
    feed(sid, conversation(20))
    assert [r for r in runs(sid) if r.status == "applied"]
    assert not [r for r in fake_api.requests if "record_summary" in json.dumps(r)]
    assert any((r.get("tool_choice") or {}).get("name") == "record_facts"
               for r in fake_api.requests)
