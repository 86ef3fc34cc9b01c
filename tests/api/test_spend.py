"""What the replies cost next to full history with caching (recap.core.spend), kept by
the reply path's upsert and each recorded run: a conversation with folds on
PostgreSQL (the real worker folds it) and on SQLite, replayed with the pure rule
(recap.core.spend.split_request), then read by ``recap stats``, ``recap.session``
(``GET /v1/sessions/{id}``) and the Prometheus exposition; a pause past the cache's
lifetime; the asyncio API's sums; and a tiny conversation whose fold makes Recap
the dearer: a loss."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select, update

import recap
from recap import aio, db
from recap.api.ingest import add_message
from recap.cli import main
from recap.core.spend import CACHE_TTL_S, Spend, split_request
from recap.models import ChatMessage, ChatSession
from recap.ops.exporter import RecapCollector
from recap.settings import get_settings
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from tests.env import TEST_ENV, migrate
from tests.helpers import LOW, join_worker, run_and_wait, runs, sentence, session_of

Fold = Callable[[str, int], None]


class Replay:
    """The sums a session should hold, from the pure rule and the test's own count
    of every message's tokens (full history)."""

    def __init__(self) -> None:
        self.sums: dict[str, int] = dict.fromkeys(
            ("replies", "recap_cache_read_tokens", "recap_cache_write_tokens",
             "recap_uncached_tokens", "full_cache_read_tokens", "full_cache_write_tokens",
             "full_uncached_tokens"), 0)
        self.history = 0
        self.last: tuple[int, int, int] | None = None  # (context, history, version)

    def message(self, sid: str, role: str, text: str, *, warm: bool = True) -> None:
        row = session_of(sid) if role == "assistant" else None
        message_id = add_message(sid, role, text)
        if row is not None:
            self._reply(row.summary_tokens + row.active_tokens, row.summary_version, warm)
        with db.transaction() as s:
            self.history += s.scalar(select(ChatMessage.token_count)
                                     .where(ChatMessage.id == message_id)) or 0

    def _reply(self, context: int, version: int, warm: bool) -> None:
        prefix, full_prefix, was = self.last or (0, 0, -1)
        ours = split_request(context, prefix=prefix,
                             warm=warm and self.last is not None and was == version)
        full = split_request(self.history, prefix=full_prefix,
                             warm=warm and self.last is not None)
        self.sums["replies"] += 1
        for side, split in (("recap", ours), ("full", full)):
            self.sums[f"{side}_cache_read_tokens"] += split.read
            self.sums[f"{side}_cache_write_tokens"] += split.write
            self.sums[f"{side}_uncached_tokens"] += split.uncached
        self.last = (context, self.history, version)


def _converse(sid: str, turns: int, *, words: int, fold: Fold,
              fold_after: set[int]) -> Replay:
    replay = Replay()
    folds = 0
    for turn in range(turns):
        replay.message(sid, "user", sentence(2 * turn, words))
        replay.message(sid, "assistant", sentence(2 * turn + 1, words))
        if turn in fold_after:
            folds += 1
            fold(sid, folds)
    statuses = [r.status for r in runs(sid)]
    assert statuses.count("applied") >= folds and set(statuses) <= {"applied", "skipped"}
    return replay


def _inline(sid: str, _: int) -> None:
    summarize(sid, job=Job(task_id="t-spend"), res=get_resources())


def _expected(sid: str, replay: Replay) -> Spend:
    applied = runs(sid)
    sums: dict[str, Any] = {
        **replay.sums,
        "summarize_input_tokens": sum(r.input_tokens or 0 for r in applied),
        "summarize_output_tokens": sum(r.output_tokens or 0 for r in applied)}
    return Spend(**sums, prices=get_settings().prices_of())



def _stats(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(["stats", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _scrape() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(RecapCollector())
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(generate_latest(registry).decode())
            for s in family.samples}


def test_a_conversation_with_folds_accounts_every_reply(
        celery_worker_thread: object, settings_env: Callable[..., None],
        capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(**LOW)
    sid = "spent"

    def by_worker(session_id: str, _: int) -> None:
        # The job may chain another fold: the replay reads the counters after both.
        run_and_wait(session_id, n=len(runs(session_id)) + 1)
        join_worker(TEST_ENV["RECAP_QUEUE"])

    replay = _converse(sid, 14, words=150, fold=by_worker, fold_after={5, 9, 12})
    want = _expected(sid, replay)
    assert want.summarize_input_tokens > 0 and want.recap_cache_read_tokens > 0
    assert want.full_cache_read_tokens > want.recap_cache_read_tokens  # history grows
    assert session_of(sid).history_tokens == replay.history

    view = recap.session(sid).spend
    assert view.model_dump(exclude={"since"}) == want.as_dict()
    assert view.replies == 14
    assert view.saved_tokens == view.full_cost_tokens - view.recap_cost_tokens
    assert view.verdict == ("saving" if view.saved_tokens > 0 else "loss")

    data = json.loads(_stats(capsys, "--json"))
    assert data["spend"] == want.as_dict()
    assert data["sessions_at_loss"] == (1 if want.saved_tokens < 0 else 0)
    one = json.loads(_stats(capsys, "--session", sid, "--json"))
    assert one["spend"] == view.model_dump(mode="json")
    text = _stats(capsys)
    assert f"{want.saved_tokens:+d}" in text and want.verdict in text

    got = _scrape()
    for path, kind, figure in (
            ("recap", "cache_read", want.recap_cache_read_tokens),
            ("recap", "cache_write", want.recap_cache_write_tokens),
            ("recap", "uncached", want.recap_uncached_tokens),
            ("recap", "summarize_input", want.summarize_input_tokens),
            ("recap", "summarize_output", want.summarize_output_tokens),
            ("full_history", "cache_read", want.full_cache_read_tokens),
            ("full_history", "cache_write", want.full_cache_write_tokens)):
        assert got[("recap_spend_tokens_total", (("kind", kind), ("path", path)))] == figure
    assert got[("recap_spend_replies_total", ())] == 14
    assert got[("recap_spend_saved_tokens", ())] == want.saved_tokens
    assert got[("recap_spend_cost_tokens", (("path", "recap"),))] == want.recap_cost_tokens
    assert got[("recap_sessions_at_loss", ())] == data["sessions_at_loss"]


def test_a_reply_after_the_cache_expired_writes_everything_again() -> None:
    sid = "paused"
    replay = Replay()
    for i in range(3):
        replay.message(sid, "user", sentence(2 * i, 400))
        replay.message(sid, "assistant", sentence(2 * i + 1, 400))
    before = session_of(sid)
    assert before.spend_recap_read > 0 and before.spend_full_read > 0
    # A pause longer than the cache's lifetime since the last reply.
    with db.transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == sid).values(
            spend_prefix_at=ChatSession.spend_prefix_at
            - timedelta(seconds=CACHE_TTL_S + 60)))
    replay.message(sid, "user", sentence(10, 400))
    replay.message(sid, "assistant", sentence(11, 400), warm=False)
    after = session_of(sid)
    assert (after.spend_recap_read, after.spend_full_read) == (
        before.spend_recap_read, before.spend_full_read)
    assert after.spend_recap_write - before.spend_recap_write == (
        after.spend_prefix_tokens)  # the whole request, written
    assert recap.session(sid).spend.model_dump(exclude={"since"}) == _expected(
        sid, replay).as_dict()


def test_a_tiny_conversation_with_a_fold_shows_a_loss(
        settings_env: Callable[..., None], capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(**LOW)
    sid = "tiny"
    replay = _converse(sid, 6, words=12, fold=_inline, fold_after={5})
    want = _expected(sid, replay)
    # Nothing is long enough to cache: both sides pay 1x, Recap its summary too.
    assert want.recap_cache_read_tokens == want.full_cache_read_tokens == 0
    view = recap.session(sid).spend
    assert view.model_dump(exclude={"since"}) == want.as_dict()
    assert view.saved_tokens < 0 and view.verdict == "loss"
    text = _stats(capsys, "--session", sid)
    assert f"{view.saved_tokens:+d}" in text and "loss" in text
    assert json.loads(_stats(capsys, "--json"))["sessions_at_loss"] == 1
    assert _scrape()[("recap_sessions_at_loss", ())] == 1
    assert _scrape()[("recap_spend_saved_usd", ())] == pytest.approx(view.saved_usd)
    # Listed by id, with the figure the session's own view shows, in its tenant only.
    losses = json.loads(_stats(capsys, "--losses", "--json"))["sessions"]
    assert [(x["session_id"], x["spend"]["saved_tokens"]) for x in losses] == [
        (sid, view.saved_tokens)]
    assert f"{sid}  {view.saved_tokens:+d}" in _stats(capsys, "--losses")
    assert "no session in tenant acme costs more" in _stats(
        capsys, "--losses", "--tenant", "acme")


def test_the_savings_view_prices_at_the_sessions_reply_model(
        settings_env: Callable[..., None], capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(**LOW)
    sid = "priced"
    replay = _converse(sid, 8, words=150, fold=_inline, fold_after={5})
    base = recap.session(sid).spend
    assert base.price_basis.startswith(f"in {get_settings().reply_model} input tokens")
    # The app replies with another model in this session: the same sums, its prices.
    recap.configure_session(sid, {"reply_model": "claude-opus-4-1"})
    own = recap.session(sid).spend
    assert own.price_basis.startswith("in claude-opus-4-1 input tokens ($15 per MTok)")
    assert own.model_dump(include=set(replay.sums)) == base.model_dump(include=set(replay.sums))
    assert own.saved_tokens != base.saved_tokens
    listed = {x["session_id"]: x["spend"]["saved_tokens"]
              for x in json.loads(_stats(capsys, "--losses", "--json"))["sessions"]}
    assert listed.get(sid, own.saved_tokens) == own.saved_tokens
    assert (sid in listed) == (own.saved_tokens < 0)


@pytest.fixture
def sqlite_url(tmp_path: Path, settings_env: Callable[..., None]) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'recap.sqlite3'}"
    migrate(url)
    db.reset_engines()
    settings_env(DATABASE_URL=url, **LOW)
    assert db.get_engine().dialect.name == "sqlite"
    yield url
    db.reset_engines()


def test_sqlite_keeps_the_same_sums(sqlite_url: str) -> None:
    sid = "embedded"
    replay = _converse(sid, 8, words=150, fold=_inline, fold_after={5})
    got: Any = recap.session(sid).spend
    assert got.model_dump(exclude={"since"}) == _expected(sid, replay).as_dict()
    assert got.recap_cache_read_tokens > 0


def test_the_asyncio_api_accounts_the_same_way() -> None:
    async def converse() -> None:
        try:
            for i in range(3):
                await aio.add_message("awaited", "user", sentence(2 * i, 400))
                await aio.add_message("awaited", "assistant", sentence(2 * i + 1, 400))
        finally:
            await aio.close()

    asyncio.run(converse())
    sync = Replay()
    for i in range(3):
        sync.message("synced", "user", sentence(2 * i, 400))
        sync.message("synced", "assistant", sentence(2 * i + 1, 400))
    awaited = recap.session("awaited").spend
    assert awaited.model_dump(exclude={"since"}) == _expected("synced", sync).as_dict()
    assert awaited.replies == 3 and awaited.recap_cache_read_tokens > 0
