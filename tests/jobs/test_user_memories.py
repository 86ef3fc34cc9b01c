"""Memories belong to the user: user_id on sessions, saving by scope (merge, replaces),
reading them back (memories_for_prompt, build_context)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select, update

from recap import db as dbm
from recap.api import aio
from recap.api.context import Context, build_context
from recap.api.ingest import add_message
from recap.core.context.assemble import system_text
from recap.core.memories.facts import Fact, normalize
from recap.db import transaction
from recap.errors import InvalidInput
from recap.models import ChatSession, Memory
from recap.sessions.overrides import configure_session, memories
from recap.settings import get_settings, load_settings
from recap.store.recall import memories_for_prompt
from recap.store.rows import save_memories
from tests.env import migrate
from tests.helpers import session_row


def save(sid: str, *facts: Fact, first: int = 1, last: int = 5) -> list[int]:
    with transaction() as s:
        return save_memories(sid, facts, db=s, first_id=first, last_id=last)


def rows() -> list[Memory]:
    with transaction() as s:
        return list(s.scalars(select(Memory).order_by(Memory.id)))


def fact(text: str, importance: int = 3, replaces: int | None = None) -> Fact:
    return Fact(text, "personal", importance, replaces)


@pytest.mark.unit
@pytest.mark.parametrize(("raw", "replaces"), [
    ({"fact": "x", "replaces": 7}, 7), ({"fact": "x"}, None), ({"fact": "x", "replaces": "7"},
                                                                None),
    ({"fact": "x", "replaces": True}, None), ({"fact": "x", "replaces": 7.0}, None),
    ({"fact": "x", "replaces": None}, None)])
def test_normalize_takes_an_int_replaces_and_ignores_anything_else(
        raw: dict[str, object], replaces: int | None) -> None:
    parsed = normalize(raw)
    assert parsed is not None and parsed.replaces == replaces


def test_user_id_is_set_once_and_another_user_is_refused_naming_both() -> None:
    add_message("s1", "user", "hi", user_id="alice")
    add_message("s1", "assistant", "hello")  # later messages may omit it
    add_message("s1", "user", "again", user_id="alice")
    with pytest.raises(InvalidInput, match="'s1' belongs to user 'alice', not 'bob'"):
        add_message("s1", "user", "hijack", user_id="bob")
    row = session_row("s1")
    assert row is not None and row.user_id == "alice" and row.message_count == 3
    with pytest.raises(InvalidInput, match="user_id is empty"):
        add_message("s2", "user", "hi", user_id=" ")
    with pytest.raises(InvalidInput, match="user_id must be a str"):
        add_message("s2", "user", "hi", user_id=42)  # type: ignore[arg-type]
    assert session_row("s2") is None


def test_configure_session_sets_the_user_and_keeps_the_overrides() -> None:
    configure_session("c1", {"keep_recent": 7}, create=True)
    assert configure_session("c1", user_id="carol") == {"keep_recent": 7}
    row = session_row("c1")
    assert row is not None and (row.user_id, row.overrides) == ("carol", {"keep_recent": 7})
    with pytest.raises(InvalidInput, match="belongs to user 'carol', not 'dave'"):
        configure_session("c1", user_id="dave")
    add_message("c1", "user", "hi", user_id="carol")


def test_a_users_memories_are_shared_by_their_sessions_and_merged() -> None:
    add_message("a1", "user", "hi", user_id="alice")
    add_message("a2", "user", "hi", user_id="alice")
    add_message("b1", "user", "hi", user_id="bob")
    add_message("anon", "user", "hi")
    save("a1", fact("The user is vegetarian."), first=1, last=5)
    save("a2", fact("The user is vegetarian."), fact("The user lives in Lisbon."),
         first=6, last=9)
    save("b1", fact("The user is vegetarian."))
    save("anon", fact("The user likes tea."))
    by_scope = {(m.scope, m.fact): (m.session_id, m.first_message_id) for m in rows()}
    assert by_scope == {("u:alice", "The user is vegetarian."): ("a1", 1),  # the first's
                        ("u:alice", "The user lives in Lisbon."): ("a2", 6),
                        ("u:bob", "The user is vegetarian."): ("b1", 1),
                        ("s:anon", "The user likes tea."): ("anon", 1)}
    assert {m["fact"] for m in memories("a1")} == {"The user is vegetarian.",
                                                    "The user lives in Lisbon."}
    assert [m["fact"] for m in memories("anon")] == ["The user likes tea."]
    ctx = build_context("a2", system_prompt="", prompt_caching=False)
    assert "- The user lives in Lisbon." in system_text(ctx["system"])
    assert "tea" not in system_text(ctx["system"])


def test_a_replaced_memory_is_kept_for_audit_and_never_shown() -> None:
    add_message("a1", "user", "Where do I live?", user_id="alice")
    add_message("b1", "user", "hi", user_id="bob")
    [old] = save("a1", fact("The user lives in Lisbon."))
    [bobs] = save("b1", fact("The user lives in Berlin."))
    [new] = save("a1", fact("The user moved to Porto.", replaces=old))
    # Outside the scope (another user's memory) or the fact itself: ignored.
    save("a1", fact("The user likes Berlin.", replaces=bobs),
         fact("The user moved to Porto.", replaces=new))
    superseded = {m.fact: m.superseded_by for m in rows()}
    assert superseded == {"The user lives in Lisbon.": new, "The user lives in Berlin.": None,
                          "The user moved to Porto.": None, "The user likes Berlin.": None}
    system = system_text(build_context("a1", system_prompt="", prompt_caching=False)["system"])
    assert "Porto" in system and "Lisbon" not in system
    assert "Lisbon" not in str(memories("a1"))
    with transaction() as s:
        found = memories_for_prompt("a1", db=s, query="where do I live", limit=10)
    assert "The user lives in Lisbon." not in [f for _, f in found]
    # Said again, a superseded fact is live again (one row).
    save("a1", fact("The user lives in Lisbon."))
    assert "Lisbon" in system_text(
        build_context("a1", system_prompt="", prompt_caching=False)["system"])
    assert sum(1 for m in rows() if m.fact == "The user lives in Lisbon.") == 1


def test_memories_for_prompt_ranks_by_relevance_with_ids() -> None:
    add_message("r1", "user", "hi", user_id="rita")
    ids = save("r1", fact("The user has a dog named Rex.", importance=1),
               fact("The user works at a bank.", importance=5),
               fact("The user flies to Tokyo in May.", importance=2))
    with transaction() as s:
        assert memories_for_prompt("r1", db=s, query="Booking my flight to Tokyo", limit=2) == [
            (ids[2], "The user flies to Tokyo in May."), (ids[1], "The user works at a bank.")]
        assert memories_for_prompt("nobody", db=s, query="x", limit=5) == []


def test_context_ranks_by_the_newest_user_turn_within_the_memory_budget(
        settings_env: Callable[..., None]) -> None:
    add_message("k1", "user", "hi", user_id="kim")
    save("k1", *[fact(f"Filler memory number {i} about something else entirely.", importance=5)
                 for i in range(60)], fact("The user is allergic to peanuts.", importance=1))
    add_message("k1", "user", "Can you suggest a snack with peanuts?")
    settings_env(RECAP_MEMORY_BUDGET_TOKENS=60, RECAP_MEMORIES_PER="reply",
                 RECAP_POLICY="threshold")  # the block is exactly the setting
    ctx = build_context("k1", system_prompt="", prompt_caching=False)
    block = system_text(ctx["system"])
    assert block.index("allergic to peanuts") < block.index("Filler")  # relevance first
    assert ctx["tokens"] <= ctx["budget"]
    assert block.count("\n- ") < 10  # bounded by the 60-token memory budget
    settings_env(RECAP_MEMORY_BUDGET_TOKENS=0)
    assert "<MEMORIES>" not in system_text(
        build_context("k1", system_prompt="", prompt_caching=False)["system"])


def set_summary(sid: str, summary: str) -> None:
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == sid)
                  .values(rolling_summary=summary, summary_tokens=20))


def crowded(sid: str, user: str, *, filler: str, rare: str, summary: str) -> None:
    """A session of ``user`` whose 60 important ``filler`` memories (``{i}`` numbered)
    crowd out the one unimportant ``rare`` fact, under ``summary``."""
    add_message(sid, "user", "hi", user_id=user)
    save(sid, *[fact(filler.format(i=i), importance=5) for i in range(60)],
         fact(rare, importance=1))
    set_summary(sid, summary)


def test_by_default_the_block_is_chosen_per_summary_version_and_cached_with_it(
        settings_env: Callable[..., None]) -> None:
    crowded("v1", "vic", filler="Filler memory number {i} about something else entirely.",
            rare="The user is allergic to peanuts.",
            summary="The user planned a party menu; peanuts were discussed at length.")
    settings_env(RECAP_MEMORY_BUDGET_TOKENS=60, RECAP_MEMORY_REPLY_TOKENS=0)
    assert get_settings().memories_per == "version"
    plain = system_text(build_context("v1", system_prompt="", prompt_caching=False)["system"])
    assert plain.index("allergic to peanuts") < plain.index("Filler")  # relevance to the summary
    contexts = []
    for turn in ("What about a cake?", "Or tacos, anything goes with them"):
        add_message("v1", "assistant", "Sure.")
        add_message("v1", "user", turn)
        contexts.append(build_context("v1", system_prompt="Be brief.", prompt_caching=True))
    first, second = contexts
    assert first["system"] == second["system"]  # the same block on every reply until a fold
    assert isinstance(second["system"], list)
    part = second["system"][-1]
    assert part["cache_control"] == {"type": "ephemeral"}
    assert part["text"].index("<MEMORIES>") < part["text"].index("<SUMMARY_OF_PRIOR_CONTEXT>")
    last = second["messages"][-1]["content"]
    assert "<MEMORIES>" not in str(last) and "cache_control" in last[-1]
    assert second["tokens"] <= second["budget"]
    set_summary("v1", "The user is choosing a bank for a mortgage.")  # a fold: a new version
    third = build_context("v1", system_prompt="Be brief.", prompt_caching=True)
    assert isinstance(third["system"], list)
    assert third["system"][0] == second["system"][0] and third["system"] != second["system"]


def test_a_question_about_a_fact_the_cached_block_misses_still_reaches_it(
        settings_env: Callable[..., None]) -> None:
    crowded("q1", "quinn", filler="The user's cluster runs service number {i}.",
            rare="The user's dog is called Biscuit.",
            summary="The user runs a cluster of services; each service was discussed.")
    settings_env(RECAP_MEMORY_BUDGET_TOKENS=200, RECAP_MEMORY_REPLY_TOKENS=60)
    add_message("q1", "assistant", "Sure.")
    add_message("q1", "user", "What is my dog called again?")
    ctx = build_context("q1", system_prompt="Be brief.", prompt_caching=True)
    assert isinstance(ctx["system"], list)
    assert "Biscuit" not in system_text(ctx["system"])  # not in the cached block
    last = ctx["messages"][-1]["content"]
    assert last[-1]["text"].startswith("<MEMORIES>") and "Biscuit" in last[-1]["text"]
    assert "cache_control" in last[-2] and "cache_control" not in last[-1]  # after it
    assert ctx["tokens"] <= ctx["budget"]
    cached_part = ctx["system"][-1]["text"]
    add_message("q1", "assistant", "Biscuit.")
    add_message("q1", "user", "Thanks, and service 7?")
    again = build_context("q1", system_prompt="Be brief.", prompt_caching=True)
    assert isinstance(again["system"], list) and again["system"][-1]["text"] == cached_part
    plain = system_text(build_context("q1", system_prompt="", prompt_caching=False)["system"])
    assert plain.count("<MEMORIES>") <= 2 and "service number" in plain


@pytest.mark.unit
def test_the_per_reply_lookup_ignores_grammar() -> None:
    # A memory matched only on "the" or "what" is not about the question: the words
    # of asking are not looked up (recap.core.context.lookback.STOP_WORDS).
    from recap.api.window import Window, memories_queries
    from recap.core.context.assemble import Row

    window = Window("The user runs services.", 5, [
        Row("user", "What is the name of the dog that is with the user?", 12)], 1000, ("s:x",))
    reads = memories_queries(window, dialect="postgresql",
                             settings=load_settings(memory_reply_tokens=100))
    topical = next(r for r in reads if r.kind == "topical")
    assert topical.terms == ["name", "dog", "user"]


def test_memories_mined_before_the_session_named_its_user_still_show() -> None:
    add_message("late", "user", "hi")
    save("late", fact("The user likes jazz."))
    add_message("late", "user", "now with a user", user_id="lee")
    save("late", fact("The user plays piano."))
    system = system_text(build_context("late", system_prompt="", prompt_caching=False)["system"])
    assert "jazz" in system and "piano" in system
    assert {m.scope for m in rows()} == {"s:late", "u:lee"}


def test_the_asyncio_api_shows_the_same_memories() -> None:
    async def scenario() -> Context:
        try:
            await aio.add_message("as1", "user", "my peanuts question", user_id="ann")
            save("as1", fact("The user is allergic to peanuts."))
            with pytest.raises(InvalidInput, match="belongs to user 'ann', not 'bo'"):
                await aio.add_message("as1", "user", "x", user_id="bo")
            return await aio.build_context("as1", system_prompt="", prompt_caching=False)
        finally:
            await aio.close()

    ctx = asyncio.run(scenario())
    assert ctx == build_context("as1", system_prompt="", prompt_caching=False)
    assert "allergic to peanuts" in system_text(ctx["system"])


@pytest.mark.unit
def test_sqlite_ranks_by_word_overlap(tmp_path: Path, settings_env: Callable[..., None]) -> None:
    url = f"sqlite:///{tmp_path / 'recap.sqlite3'}"
    migrate(url)
    dbm.reset_engines()
    settings_env(DATABASE_URL=url)
    try:
        settings_env(DATABASE_URL=url, RECAP_MEMORIES_PER="reply")
        assert get_settings().database_url == url
        add_message("lite", "user", "hi", user_id="sam")
        save("lite", fact("The user works at a bank.", importance=5),
             fact("The user flies to Tokyo in May.", importance=1))
        add_message("lite", "user", "What should I pack for Tokyo?")
        system = system_text(
            build_context("lite", system_prompt="", prompt_caching=False)["system"])
        assert system.index("Tokyo in May") < system.index("bank")
        with pytest.raises(InvalidInput, match="belongs to user 'sam'"):
            add_message("lite", "user", "x", user_id="other")
    finally:
        dbm.reset_engines()


def test_the_langchain_history_passes_the_user_on() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from recap.integrations.langchain import RecapChatMessageHistory

    RecapChatMessageHistory("lc1", user_id="lara").add_messages([HumanMessage("hi"),
                                                                 AIMessage("hello")])
    row = session_row("lc1")
    assert row is not None and row.user_id == "lara"
    with pytest.raises(InvalidInput, match="belongs to user 'lara', not 'leo'"):
        RecapChatMessageHistory("lc1", user_id="leo").add_messages([HumanMessage("x")])
    with pytest.raises(InvalidInput, match="user_id must be a str"):
        RecapChatMessageHistory("lc2", user_id=3)  # type: ignore[arg-type]


@pytest.mark.unit
def test_sqlite_finds_the_fact_a_question_asks_about_among_many(
        tmp_path: Path, settings_env: Callable[..., None]) -> None:
    url = f"sqlite:///{tmp_path / 'recap.sqlite3'}"
    migrate(url)
    dbm.reset_engines()
    settings_env(DATABASE_URL=url, RECAP_MEMORY_BUDGET_TOKENS=200,
                 RECAP_MEMORY_REPLY_TOKENS=60)
    try:
        crowded("lite2", "sue", filler="The user's cluster runs service number {i}.",
                rare="The user flies to Tokyo in May.",
                summary="The user runs a cluster of services; each was discussed.")
        add_message("lite2", "assistant", "Sure.")
        add_message("lite2", "user", "What should I pack for Tokyo?")
        ctx = build_context("lite2", system_prompt="", prompt_caching=True)
        last = ctx["messages"][-1]["content"]
        assert "Tokyo in May" in last[-1]["text"]  # scored after the read, not cut before it
    finally:
        dbm.reset_engines()
