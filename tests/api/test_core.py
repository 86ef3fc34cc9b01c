"""The reply core decides without I/O: the hook's plan from a row of counters, the
jobs it sends in order, the statement values of a new message, stored blocks read
back in pieces."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from recap.api.core import (
    BLOCKS_PIECE_CHARS,
    NewMessage,
    blocks_json,
    load_blocks,
    validate_message,
)
from recap.api.hook import plan_hook
from recap.core.spend import CACHE_TTL_S
from recap.errors import InvalidInput
from recap.settings import Settings, get_settings
from recap.store.enqueue import JobKind, JobToSend, ReplyJobs
from tests.helpers import LOW

pytestmark = pytest.mark.unit

NOW = datetime(2026, 1, 1, tzinfo=UTC)
STALE = NOW - timedelta(seconds=300)


@pytest.fixture
def settings(settings_env: Callable[..., None]) -> Settings:
    settings_env(**LOW)
    return get_settings()


def counters(**changes: object) -> SimpleNamespace:
    row = {"message_count": 12, "active_tokens": 2000, "summary_tokens": 0, "leased": False,
           "blocked": False, "normal_blocked": False, "normal_blocked_under": None,
           "overrides": None, "title": "Trip", "title_fresh": False}
    return SimpleNamespace(**{**row, **changes})


def test_no_session_means_no_job(settings: Settings) -> None:
    hook = plan_hook("s", None, settings=settings, now=NOW, stale=STALE)
    assert (hook.title, hook.summarize) == (None, None)


def test_over_the_triggers_it_marks_the_session_pending(settings: Settings) -> None:
    hook = plan_hook("s", counters(), settings=settings, now=NOW, stale=STALE)
    assert hook.title is None and hook.summarize is not None
    assert "enqueued_at" in str(hook.summarize)


@pytest.mark.parametrize("why", [{"leased": True}, {"blocked": True},
                                 {"message_count": 3, "active_tokens": 50}])
def test_a_running_job_a_cool_down_or_small_counters_queue_nothing(
        settings: Settings, why: dict[str, object]) -> None:
    hook = plan_hook("s", counters(**why), settings=settings, now=NOW, stale=STALE)
    assert hook.summarize is None


def test_an_untitled_session_past_its_first_exchange_asks_for_a_title(
        settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_TITLES_ENABLED="true")
    hook = plan_hook("s", counters(title=None, leased=True), settings=get_settings(),
                     now=NOW, stale=STALE)
    assert hook.title is not None and hook.summarize is None
    hook = plan_hook("s", counters(title=None, title_fresh=True), settings=get_settings(),
                     now=NOW, stale=STALE)
    assert hook.title is None  # one is pending already


def test_jobs_to_send_title_first() -> None:
    assert ReplyJobs(summarize=True, title=True).to_send("s") == [
        JobToSend(JobKind.TITLE, "s"), JobToSend(JobKind.SUMMARIZE, "s")]
    assert ReplyJobs().to_send("s") == []


def test_a_new_message_binds_every_column(settings: Settings) -> None:
    msg = validate_message("s", "user", "hello", pinned=False, user_id="u",
                           max_inline_chars=settings.max_inline_base64_chars)
    params = NewMessage("s", "user", msg, 3, False, "u").params(NOW)
    assert params == {"session_id": "s", "role": "user", "content": "hello", "pinned": False,
                      "tokens": 3, "now": NOW, "user_id": "u", "blocks": None,
                      "tool_links": None}
    # A reply also accounts for its request (recap.api.spend), in a statement of its own.
    reply = NewMessage("s", "assistant", msg, 3)
    assert reply.params(NOW)["cache_after"] == NOW - timedelta(seconds=CACHE_TTL_S)
    assert reply.statement() is not NewMessage("s", "user", msg, 3).statement()


def test_the_statement_binds_only_what_varies() -> None:
    # Column defaults and constants are written into the SQL: a bound parameter
    # costs every execution on the reply path.
    from sqlalchemy import ClauseElement
    from sqlalchemy.dialects import postgresql

    from recap.api.core import add_statement

    for reply, extra in ((False, set()), (True, {"cache_after"})):
        statement = add_statement(reply=reply)
        assert isinstance(statement, ClauseElement)
        sql = statement.compile(dialect=postgresql.dialect())
        assert set(sql.params) == {"session_id", "role", "content", "pinned", "tokens", "now",
                                   "user_id", "blocks", "tool_links", *extra}


@pytest.mark.parametrize("args", [("", "user", "x"), ("s", "robot", "x"), ("s", "user", 3)])
def test_bad_input_is_refused_before_any_statement(settings: Settings,
                                                   args: tuple[object, ...]) -> None:
    with pytest.raises(InvalidInput):
        validate_message(*args, pinned=False, user_id=None,
                         max_inline_chars=settings.max_inline_base64_chars)


def _text(i: int, text: str = "") -> dict[str, object]:
    return {"type": "text", "text": text or f"line {i}: GET /items/{i} 200"}


# A cut between pieces may fall anywhere: inside a block's string that looks like a
# block boundary, between nested blocks, in the last block.
_LOOKALIKE = 'x", "y"}, {"type": "text", "text": "z'
_NESTED = {"type": "tool_result", "tool_use_id": "t",
           "content": [_text(0, "a" * 100), _text(1, "b" * 100)]}
BLOCK_ARRAYS = {
    "many small blocks": [_text(i) for i in range(5000)],
    "a boundary inside a string": [_text(i, _LOOKALIKE * 50) for i in range(400)],
    "boundaries between nested blocks": [_NESTED] * 1000,
    "the last block past a cut": [_text(0), _text(1, "x" * BLOCKS_PIECE_CHARS + _LOOKALIKE)],
    "one huge block": [_text(0, "y" * 3 * BLOCKS_PIECE_CHARS)],
    "short": [_text(0)],
    "empty": [],
}


@pytest.mark.parametrize("blocks", BLOCK_ARRAYS.values(), ids=BLOCK_ARRAYS.keys())
@pytest.mark.parametrize("dump", [blocks_json, json.dumps,
                                  lambda b: json.dumps(b, separators=(",", ":")),
                                  lambda b: f"  {json.dumps(b, indent=1)}\n"])
def test_stored_blocks_read_back_whole_in_pieces(blocks: list[dict[str, object]],
                                                 dump: Callable[[object], str]) -> None:
    assert load_blocks(dump(blocks)) == blocks


@pytest.mark.parametrize("text", [
    json.dumps({"blocks": [_text(i) for i in range(5000)]}),  # not an array
    json.dumps([_text(i) for i in range(5000)]) + " ]",  # text after the array
    json.dumps([_text(i) for i in range(5000)])[:-1],  # cut short
    json.dumps([_text(i) for i in range(5000)]).replace("}, {", "} {", 3000),
    "[1, 2]" + " " * BLOCKS_PIECE_CHARS + "x",
    '{"a": 1}',
])
def test_stored_blocks_that_are_not_an_array_raise_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        load_blocks(text)
