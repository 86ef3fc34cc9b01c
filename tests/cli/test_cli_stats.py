"""``recap stats`` and ``recap failures``, run in-process with ``main([...])`` against the
test PostgreSQL database (and SQLite) and the fake Messages API."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, insert, select, update

from recap import db
from recap.db import utcnow
from recap.models import ChatMessage, ChatSession, SummaryRun
from tests.cli.common import make_dead, run, run_inline
from tests.env import API_KEY, migrate
from tests.helpers import LOW, runs, seed

# -- stats and failures --------------------------------------------------------------

def _stats(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = run(capsys, "stats", "--json")
    assert code == 0, err
    return dict(json.loads(out))


def _scenario() -> None:
    """'busy': two applied runs; 'broken': one dead run; 'quiet': below thresholds."""
    seed("busy", 12)
    assert run_inline("busy").status == "applied"
    seed("busy", 6)  # 13 active again: one more batch
    assert run_inline("busy").status == "applied"
    make_dead("broken")
    seed("quiet", 3)


def _check_stats(data: dict[str, Any]) -> None:
    applied = [r for r in runs() if r.status == "applied"]
    latencies = sorted(r.latency_ms for r in applied if r.latency_ms is not None)
    with db.transaction() as s:
        active_tokens = s.scalar(select(func.sum(ChatMessage.token_count)))
        active = s.scalar(select(func.count()).select_from(ChatMessage))
    assert data["sessions"] == 3
    assert data["active_messages"] == active == 8 + 12 + 3
    assert data["active_tokens"] == active_tokens
    assert data["summaries_applied"] == 2
    assert data["messages_condensed"] == 10
    assert data["dead_runs"] == 1 and data["failed_runs"] == 0
    assert data["runs_by_status"] == {"applied": 2, "dead": 1}
    assert data["latency_p50_ms"] == latencies[0]  # nearest rank of 2 values
    assert data["latency_p95_ms"] == latencies[1]
    assert data["api_input_tokens"] == sum(r.input_tokens or 0 for r in applied) > 0
    assert data["api_output_tokens"] == sum(r.output_tokens or 0 for r in applied) > 0
    assert data["sessions_blocked"] == 1  # the dead one, cooling down
    assert data["sessions_leased"] == 0 and data["sessions_pending"] == 0
    assert data["sessions_needing_escalation"] == 0
    with db.transaction() as s:
        summaries = s.scalar(select(func.sum(ChatSession.summary_tokens)))
    condensed = sum(r.condensed_tokens or 0 for r in applied)
    assert data["context_tokens_removed"] == condensed - (summaries or 0)


def test_stats_counts_sessions_runs_latency_and_usage(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    _scenario()
    _check_stats(_stats(capsys))
    code, out, _ = run(capsys, "stats")
    assert code == 0
    assert "summaries applied" in out and "runs by status" in out
    assert "context tokens the summaries keep out (est.; a size, not money)" in out


def test_stats_reports_kept_specifics_by_rank(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    seed("ranked", 3)
    with db.transaction() as s:
        for stated, archived in ((4, 120), (1, 30)):
            s.execute(insert(SummaryRun).values(
                session_id="ranked", attempt=0, status="applied", reason="r",
                messages_condensed=1, specifics_total=stated + 3, specifics_missing_after=0,
                specifics_stated=stated, specifics_referred=2, specifics_used=1,
                specifics_rest=0, specifics_archived=archived))
    data = _stats(capsys)
    assert (data["specifics_stated"], data["specifics_referred"], data["specifics_used"],
            data["specifics_rest"], data["specifics_archived"]) == (5, 4, 2, 0, 150)
    code, out, _ = run(capsys, "stats")
    assert code == 0
    assert "specifics kept: stated by the user" in out
    assert any(line.startswith("specifics left in the archive (nothing used them)")
               and line.split()[-1] == "150" for line in out.splitlines())
    assert "moved to memories" not in out


def test_stats_live_lease_and_pending_marker(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    seed("held", 2)
    seed("queued", 2)
    now = utcnow()
    with db.transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == "held").values(
            lease_token="t", lease_expires_at=now + timedelta(minutes=5)))
        s.execute(update(ChatSession).where(ChatSession.id == "queued").values(enqueued_at=now))
    data = _stats(capsys)
    assert (data["sessions_leased"], data["sessions_pending"]) == (1, 1)
    assert data["latency_p50_ms"] is None  # no applied run yet
    with db.transaction() as s:  # no job exists for these markers: leave nothing behind
        s.execute(update(ChatSession).values(lease_token=None, lease_expires_at=None,
                                             enqueued_at=None))


@pytest.mark.unit
def test_stats_on_sqlite_matches(tmp_path: Path, settings_env: Callable[..., None],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'recap.sqlite3'}"
    migrate(url)
    db.reset_engines()
    settings_env(DATABASE_URL=url, **LOW)
    try:
        _scenario()
        _check_stats(_stats(capsys))
    finally:
        db.reset_engines()


@pytest.mark.unit
def test_stats_with_a_bad_setting_exits_1_naming_it(
        settings_env: Callable[..., None], capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(RECAP_BATCH_SIZE="abc")
    code, out, err = run(capsys, "stats")
    assert code == 1
    assert err.startswith("recap: error: invalid configuration: RECAP_BATCH_SIZE")
    assert "Traceback" not in err and out == ""


def test_failures_lists_the_401_without_the_api_key(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    seed("fine", 12)
    run_inline("fine")
    make_dead("broken")
    code, out, err = run(capsys, "failures")
    assert code == 0, err
    assert "dead" in out and "session=broken" in out and "task=t-cli" in out
    assert "PermanentLLMError: AuthenticationError 401" in out
    assert "fine" not in out
    assert API_KEY not in out + err
    code, out, _ = run(capsys, "failures", "--json", "--limit", "1")
    items = json.loads(out)
    assert [i["status"] for i in items] == ["dead"]
    assert API_KEY not in out


def test_failures_when_there_are_none(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "failures")[1] == "no failed or dead runs\n"
