"""The context builder at the database edge: the snapshot read, token estimates,
settings, concurrency, and what the real SDK accepts."""

from __future__ import annotations

import json
import threading
from typing import Any

import anthropic
import pytest
from sqlalchemy import delete, event, text, update

from recap.api.context import build_context, read_window, render_json
from recap.api.ingest import add_message
from recap.core.context.assemble import (
    PLACEHOLDER_START,
    SUMMARY_CLOSE,
    SUMMARY_OPEN,
    TOOL_PREFIX,
    content_text,
    system_text,
)
from recap.core.context.request import as_request
from recap.db import get_engine, transaction
from recap.errors import InvalidInput, SessionNotFound
from recap.llm.tokens import count_tokens
from recap.models import ChatMessage, ChatSession
from tests.api.common import PROMPT, assert_valid
from tests.env import API_KEY
from tests.helpers import seed


def set_summary(session_id: str, summary: str) -> None:
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == session_id).values(
            rolling_summary=summary, summary_tokens=count_tokens(summary)))


# -- the database edge ------------------------------------------------------------

def test_build_context_from_the_database_with_summary_and_pinned() -> None:
    seed("db1", 4, words=10, pinned={1})
    set_summary("db1", "The user is planning a trip to Lisbon.")
    ctx = build_context("db1", system_prompt=PROMPT)
    assert system_text(ctx["system"]).startswith(PROMPT + "\n\n" + SUMMARY_OPEN)
    assert "Lisbon." + SUMMARY_CLOSE in system_text(ctx["system"])
    assert [m["role"] for m in ctx["messages"]] == ["user", "assistant", "user", "assistant"]
    assert ctx["messages"][1]["content"].endswith("(msg 1).")  # the pinned one is there
    assert_valid(ctx)
    assert json.loads(render_json("db1", PROMPT)) == ctx


def test_system_and_tool_rows_from_the_database() -> None:
    add_message("db2", "assistant", "Let me look that up.")
    add_message("db2", "tool", "flight TP123 departs 09:40")
    add_message("db2", "system", "The user prefers morning flights.")
    add_message("db2", "user", "Book it.")
    ctx = build_context("db2", system_prompt=PROMPT, prompt_caching=False)
    assert ctx["system"] == PROMPT + "\n\nThe user prefers morning flights."
    assert ctx["messages"] == [
        {"role": "user", "content": PLACEHOLDER_START},
        {"role": "assistant", "content": "Let me look that up."},
        {"role": "user", "content": TOOL_PREFIX + "flight TP123 departs 09:40\n\nBook it."}]
    assert_valid(ctx)


def test_session_without_messages_is_found_and_empty() -> None:
    seed("db3", 1)
    with transaction() as s:
        s.execute(delete(ChatMessage).where(ChatMessage.session_id == "db3"))
    set_summary("db3", "Everything so far.")
    ctx = build_context("db3", system_prompt=PROMPT)
    assert ctx["messages"] == [] and "Everything so far." in system_text(ctx["system"])


def test_unknown_and_invalid_session_ids() -> None:
    with pytest.raises(SessionNotFound, match="no-such-session"):
        build_context("no-such-session", system_prompt=PROMPT)
    for bad in ("", "x" * 256, 42):
        with pytest.raises(InvalidInput):
            build_context(bad, system_prompt=PROMPT)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="system_prompt"):
        build_context("db1", system_prompt=None)  # type: ignore[arg-type]


def test_token_estimate_uses_stored_counts_not_retokenization() -> None:
    seed("tok", 6, words=30)
    set_summary("tok", "A summary of what came before, with some detail about hotels.")
    ctx = build_context("tok", system_prompt=PROMPT)
    # Close to tokenizing the whole rendered request at once (boundaries differ slightly).
    whole = count_tokens(system_text(ctx["system"])) + sum(count_tokens(content_text(m["content"]))
                                                           for m in ctx["messages"])
    assert abs(ctx["tokens"] - whole) <= 10, (ctx["tokens"], whole)
    # The stored counts are what is summed: change them and the estimate follows.
    with transaction() as s:
        s.execute(update(ChatMessage).where(ChatMessage.session_id == "tok")
                  .values(token_count=ChatMessage.token_count + 1000))
        s.execute(update(ChatSession).where(ChatSession.id == "tok")
                  .values(summary_tokens=ChatSession.summary_tokens + 500))
    assert build_context("tok", system_prompt=PROMPT)["tokens"] == ctx["tokens"] + 6500


def test_budget_comes_from_settings(settings_env: Any) -> None:
    seed("bud", 2)
    settings_env(RECAP_CONTEXT_BUDGET_TOKENS=50000)
    assert build_context("bud", system_prompt=PROMPT)["budget"] == 50000


def test_summary_and_messages_are_read_in_one_statement() -> None:
    # One statement sees one snapshot even under READ COMMITTED; two would not.
    # Memories come in later ones (read_window says why that is safe): the block
    # chosen per summary version, and those relevant to the newest user turn.
    seed("one", 5)
    statements: list[str] = []

    def record(conn: Any, cursor: Any, stmt: str, *args: Any) -> None:
        statements.append(stmt)

    engine = get_engine()
    event.listen(engine, "before_cursor_execute", record)
    try:
        read_window("one")
    finally:
        event.remove(engine, "before_cursor_execute", record)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 3
    assert "chat_sessions" in selects[0] and "chat_messages" in selects[0]
    assert all("FROM memories" in s and "chat_messages" not in s for s in selects[1:])


def test_concurrent_summaries_never_show_a_torn_snapshot() -> None:
    # A writer applies "summaries" like apply_summary does (summary + delete, one
    # transaction); every read must see summary k together with exactly rows k..
    n = 60
    ids = seed("race", n, words=3)
    done = threading.Event()

    def writer() -> None:
        try:
            for k in range(1, n):
                with transaction() as s:
                    s.execute(update(ChatSession).where(ChatSession.id == "race")
                              .values(rolling_summary=f"upto {k}", summary_tokens=2))
                    s.execute(delete(ChatMessage).where(ChatMessage.id == ids[k - 1]))
        finally:
            done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    reads = 0
    while not done.is_set() or reads == 0:
        summary, _, window, *_ = read_window("race")
        k = int(summary.split()[1]) if summary else 0
        assert len(window) == n - k, (summary, len(window))
        reads += 1
    thread.join()


def test_the_real_sdk_accepts_the_context(fake_api: Any) -> None:
    seed("sdk", 5, words=12)
    add_message("sdk", "system", "Be brief.")
    add_message("sdk", "tool", "lookup result")
    set_summary("sdk", "Earlier: the user asked about budgets.")
    ctx = build_context("sdk", system_prompt=PROMPT)
    client = anthropic.Anthropic(api_key=API_KEY, base_url=fake_api.url, max_retries=0)
    reply = client.messages.create(model="claude-test", max_tokens=64,
                                   **as_request(ctx, user_message="And now?"))
    assert reply.content[0].text
    sent = fake_api.requests[-1]
    assert sent["system"] == ctx["system"]
    assert sent["messages"][:-1] == ctx["messages"][:-1]
    # The bare fields work too, exactly as the brief's call shape.
    client.messages.create(model="claude-test", max_tokens=64,
                           system=ctx["system"],  # type: ignore[arg-type]
                           messages=ctx["messages"])  # type: ignore[arg-type]
    assert fake_api.requests[-1]["messages"] == ctx["messages"]


def test_render_json_is_pretty_and_round_trips() -> None:
    seed("js", 2)
    out = render_json("js", "Ünïcode prompt")
    assert out.startswith("{\n  \"system\": [") and "Ünïcode prompt" in out
    data = json.loads(out)
    assert set(data) == {"system", "messages", "tokens", "budget", "parts"}
    assert data["parts"] == {"summary": False, "summary_version": None, "details": False,
                             "memories": 0, "recalled": 0, "withheld": 0}
    assert system_text(data["system"]) == "Ünïcode prompt"


def test_pg_read_committed_is_the_default_here() -> None:
    # Documents why read_window uses one statement: the default isolation level.
    with transaction() as s:
        level = s.execute(text("SHOW transaction_isolation")).scalar_one()
    assert level == "read committed"


def test_each_reply_reads_the_previous_request_from_the_prompt_cache(fake_api: Any) -> None:
    # The chat app's loop (README): store the user turn, build, call, store the reply.
    client = anthropic.Anthropic(api_key=API_KEY, base_url=fake_api.url, max_retries=0)
    seed("cache", 6, words=40)
    set_summary("cache", "Earlier: the user asked about budgets.")
    usages = []
    for turn in range(3):
        add_message("cache", "user", f"Question {turn}: what about the hotel budget?")
        reply = client.messages.create(model="claude-test", max_tokens=64,
                                       **as_request(build_context("cache", system_prompt=PROMPT)))
        usages.append(reply.usage)
        add_message("cache", "assistant", f"Answer {turn}: about 120 EUR a night.")
    first, second, third = usages
    assert first.cache_read_input_tokens == 0 and first.cache_creation_input_tokens
    # Everything the previous request wrote up to its last breakpoint is read back;
    # only the new turns are written.
    for before, after in ((first, second), (second, third)):
        assert after.cache_read_input_tokens == (before.cache_read_input_tokens
                                                 + before.cache_creation_input_tokens)
        assert 0 < after.cache_creation_input_tokens < after.cache_read_input_tokens
        assert after.input_tokens == 0  # the breakpoint is on the last block
    # Off: plain strings, nothing cached.
    ctx = build_context("cache", system_prompt=PROMPT, prompt_caching=False)
    assert isinstance(ctx["system"], str)
    reply = client.messages.create(model="claude-test", max_tokens=64,
                                   **as_request(ctx, user_message="And now?"))
    assert (reply.usage.cache_read_input_tokens, reply.usage.cache_creation_input_tokens) == (0, 0)
