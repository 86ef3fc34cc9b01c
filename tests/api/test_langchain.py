"""LangChain's chat history on Recap: a RunnableWithMessageHistory chain switches to
Recap by changing its history factory; stored rows, the summary as a system
message, the hook, and what cannot be stored."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.chat_history import BaseChatMessageHistory, InMemoryChatMessageHistory
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory
from sqlalchemy import select

from recap.api.context import build_context
from recap.core.context.assemble import SUMMARY_CLOSE, SUMMARY_OPEN, system_text
from recap.db import transaction
from recap.errors import InvalidInput
from recap.integrations.langchain import RecapChatMessageHistory
from recap.models import ChatMessage as Row
from recap.testing import FakeAnthropic
from tests.api.test_import_cost import forbidden, loaded_after
from tests.helpers import (
    LOW,
    run_and_wait,
    seed,
    sentence,
    session_of,
    session_row,
    statuses,
    wait_for,
)

# LangChain deprecates RunnableWithMessageHistory in favour of LangGraph (removal
# in langchain-core 2.0); it is still what chains with a history use.
pytestmark = pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")

APP_PROMPT = "You are a travel assistant."
QUESTIONS = [sentence(2 * i, 40) for i in range(8)]
REPLIES = [sentence(2 * i + 1, 40) for i in range(8)]
CONFIG: RunnableConfig = {"configurable": {"session_id": "lc"}}


def stored(session_id: str) -> list[tuple[str, str]]:
    with transaction() as s:
        return [(r.role, r.content) for r in s.execute(
            select(Row.role, Row.content).where(Row.session_id == session_id).order_by(Row.id))]


def pairs(messages: list[BaseMessage]) -> list[tuple[str, object]]:
    return [(m.type, m.content) for m in messages]


def make_chat(get_session_history: Callable[[str], BaseChatMessageHistory],
              ) -> tuple[RunnableWithMessageHistory, list[list[BaseMessage]]]:
    """The usual LangChain chat: prompt (system, history, question) | chat model,
    with its history kept by RunnableWithMessageHistory. Also returns what the
    model was given on each call."""
    seen: list[list[BaseMessage]] = []

    def spy(value: PromptValue) -> PromptValue:
        seen.append(value.to_messages())
        return value

    prompt = ChatPromptTemplate.from_messages([
        ("system", APP_PROMPT), MessagesPlaceholder("history"), ("human", "{question}")])
    chain = prompt | RunnableLambda(spy) | FakeListChatModel(responses=REPLIES)
    return RunnableWithMessageHistory(chain, get_session_history,
                                      input_messages_key="question",
                                      history_messages_key="history"), seen


def test_a_chain_switches_to_recap_by_changing_the_factory(
        settings_env: Callable[..., None], published: list[str], fake_api: FakeAnthropic,
        celery_worker_thread: object) -> None:
    settings_env(**LOW)
    # The chain as written with LangChain's own in-memory history ...
    memory: dict[str, InMemoryChatMessageHistory] = {}
    chat, seen_in_memory = make_chat(
        lambda sid: memory.setdefault(sid, InMemoryChatMessageHistory()))
    for q in QUESTIONS[:6]:
        chat.invoke({"question": q}, config=CONFIG)

    # ... and on Recap: only the factory differs.
    chat, seen = make_chat(lambda sid: RecapChatMessageHistory(sid))
    for turn, q in enumerate(QUESTIONS[:5]):
        assert chat.invoke({"question": q}, config=CONFIG).content == REPLIES[turn]
        assert published == []  # 10 messages or fewer: the hook has nothing to queue
    gate = fake_api.hold(calls=1)  # the summarize job's Claude call, once queued
    chat.invoke({"question": QUESTIONS[5]}, config=CONFIG)
    assert published == ["lc"]  # the hook ran after the AI message and queued the job
    gate.wait_entered()

    # Until a summary applies, the model sees exactly what it saw with LangChain's history.
    assert [pairs(m) for m in seen] == [pairs(m) for m in seen_in_memory]
    expected = [row for q, r in zip(QUESTIONS[:6], REPLIES, strict=False)
                for row in (("user", q), ("assistant", r))]
    assert stored("lc") == expected
    assert pairs(RecapChatMessageHistory("lc").messages) == pairs(memory["lc"].messages)

    gate.release()
    wait_for(lambda: "applied" in statuses("lc"), what="the summary to apply")
    summary = session_of("lc").rolling_summary
    assert summary
    history = RecapChatMessageHistory("lc").messages
    # The summary comes first, as a system message; then the window, alternating.
    assert isinstance(history[0], SystemMessage)
    # After it, at most the archive's lines the newest question names (recall).
    head, _, recalled = str(history[0].content).partition(SUMMARY_CLOSE)
    assert head + SUMMARY_CLOSE == SUMMARY_OPEN + summary + SUMMARY_CLOSE
    assert recalled == "" or recalled.lstrip().startswith("<ARCHIVE_RECALL>")
    window = history[1:]
    assert [type(m) for m in window] == [HumanMessage, AIMessage] * (len(window) // 2)
    left = stored("lc")
    assert 0 < len(left) < len(expected)
    text = "\n\n".join(str(m.content) for m in window)
    assert all(content in text for _, content in left)
    assert not any(content in text for _, content in expected[:len(expected) - len(left)])
    assert window[-1].content == REPLIES[5]

    # The next turn: the model gets the app's prompt, the summary, the window, the question.
    chat.invoke({"question": QUESTIONS[6]}, config=CONFIG)
    assert pairs(seen[-1]) == pairs([SystemMessage(APP_PROMPT), *history,
                                     HumanMessage(QUESTIONS[6])])
    assert stored("lc") == [*left, ("user", QUESTIONS[6]), ("assistant", REPLIES[6])]


@pytest.mark.usefixtures("celery_worker_thread")
def test_a_summary_applied_during_the_model_call_stores_the_turn_once(
        settings_env: Callable[..., None]) -> None:
    # Without history_messages_key, RunnableWithMessageHistory re-reads the history
    # when the turn ends and takes the input to be what lies past its length. A
    # summary applied meanwhile shortens it; the history must not change under it.
    settings_env(**LOW)
    seed("mid", 12)
    before = stored("mid")

    def summarize_now(value: Any) -> Any:
        run_and_wait("mid")  # a job queued by the last turn's hook, landing right now
        return value

    model: Runnable[Any, Any] = RunnableLambda(summarize_now) | FakeListChatModel(
        responses=["the reply"])
    chat = RunnableWithMessageHistory(model, lambda sid: RecapChatMessageHistory(sid))
    chat.invoke("the question", config={"configurable": {"session_id": "mid"}})
    assert statuses("mid") == ["applied"]
    after = stored("mid")
    assert len(after) < len(before) + 2
    assert after == [*before[len(before) + 2 - len(after):],
                     ("user", "the question"), ("assistant", "the reply")]


def test_messages_render_what_build_context_builds() -> None:
    history = RecapChatMessageHistory("roles", system_prompt="You are terse.")
    assert history.messages == []  # nothing stored yet
    history.add_messages([
        SystemMessage("Answer in French."),
        HumanMessage(content=["What is ", {"type": "text", "text": "6 x 7?"}]),
        AIMessage("Let me compute it.", tool_calls=[CALC]),
        ToolMessage("42", tool_call_id="call_1"),
        ChatMessage(role="user", content="And in words?"),
        AIMessage(content=[{"type": "text", "text": "Quarante-deux."}]),
    ])
    assert [(role, text) for role, text in stored("roles")] == [
        ("system", "Answer in French."), ("user", "What is 6 x 7?"),
        ("assistant", 'Let me compute it.\n[tool call calc (call_1): {"expr": "6*7"}]'),
        ("tool", "[tool result for call_1: 42]"), ("user", "And in words?"),
        ("assistant", "Quarante-deux.")]
    # The call and its result come back as a tool call and a ToolMessage.
    fresh = RecapChatMessageHistory("roles", system_prompt="You are terse.")
    got = fresh.messages
    assert pairs(got) == [("system", "You are terse.\n\nAnswer in French."),
                          ("human", "What is 6 x 7?"),
                          ("ai", [{"type": "text", "text": "Let me compute it."}]),
                          ("tool", "42"), ("human", [{"type": "text", "text": "And in words?"}]),
                          ("ai", "Quarante-deux.")]
    assert isinstance(got[2], AIMessage) and got[2].tool_calls[0]["id"] == "call_1"
    assert isinstance(got[3], ToolMessage) and got[3].tool_call_id == "call_1"
    ctx = build_context("roles", system_prompt="You are terse.")
    assert got[0].content == system_text(ctx["system"])
    assert RecapChatMessageHistory("roles").messages[0].content == "Answer in French."


def test_a_tool_result_without_its_call_comes_back_labelled() -> None:
    history = RecapChatMessageHistory("orphan")
    history.add_messages([HumanMessage("6 x 7?"), AIMessage("Computing."),
                          ToolMessage("42", tool_call_id="call_9", status="error")])
    assert pairs(RecapChatMessageHistory("orphan").messages)[-1] == (
        "human", [{"type": "text", "text": "[tool result for call_9, error: 42]"}])


def test_the_hook_runs_after_ai_messages_only(
        settings_env: Callable[..., None], published: list[str]) -> None:
    settings_env(**LOW)
    history = RecapChatMessageHistory("hook")
    history.add_messages([HumanMessage(sentence(i, 40)) for i in range(11)])
    assert published == []  # over the thresholds, but no reply yet
    history.add_messages([AIMessage(sentence(11, 40))])
    assert published == ["hook"]
    history.add_messages([])
    assert published == ["hook"]


TOOL_CALL = {"name": "weather", "args": {"city": "Lisbon"}, "id": "call_1"}
CALC = {"name": "calc", "args": {"expr": "6*7"}, "id": "call_1"}


@pytest.mark.parametrize(("message", "problem"), [
    (HumanMessage(content=[{"type": "image_url", "image_url": {"url": "data:,"}}]),
     r"message 1 \(HumanMessage\): content\[0\] \(image_url\): unknown type 'image_url'"),
    (AIMessage(content=[{"type": "text", "text": "Checking."},
                        {"type": "tool_use", "id": "t t", "name": "weather", "input": {}}]),
     r"content\[1\] \(tool_use\): id: String should match pattern"),
    (AIMessage(content="", invalid_tool_calls=[{"name": "w", "args": "{", "id": "c",
                                                "error": "bad json", "type": "invalid_tool_call"}]),
     "invalid_tool_calls cannot be stored"),
    (HumanMessage(""), r"message 1 \(HumanMessage\): content is empty"),
    (HumanMessage("a\x00b"), "NUL"),
    (ChatMessage(role="robot", content="beep"), "unknown role 'robot'"),
    (FunctionMessage(name="f", content="x"), "not 'function'"),
    ("just text", "must be a LangChain BaseMessage, got str"),
])
def test_a_batch_with_a_message_recap_cannot_store_writes_nothing(
        message: Any, problem: str, published: list[str]) -> None:
    history = RecapChatMessageHistory("bad")
    with pytest.raises(InvalidInput, match=problem):
        history.add_messages([HumanMessage("This one is fine."), message])
    assert stored("bad") == [] and session_row("bad") is None and published == []


@pytest.mark.unit
@pytest.mark.parametrize(("args", "kwargs", "problem"), [
    (("",), {}, "session_id is empty"),
    ((42,), {}, "session_id must be a str, got int"),
    (("x" * 256,), {}, "at most 255"),
    (("ok",), {"system_prompt": 3}, "system_prompt must be a str, got int"),
    (("ok",), {"system_prompt": "a\x00b"}, "NUL"),
])
def test_bad_session_id_or_system_prompt(args: tuple[Any, ...], kwargs: dict[str, Any],
                                         problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        RecapChatMessageHistory(*args, **kwargs)


def test_clear_is_refused_and_keeps_the_history() -> None:
    history = RecapChatMessageHistory("keep")
    history.add_messages([HumanMessage("hello"), AIMessage("hi")])
    with pytest.raises(NotImplementedError, match="new session id"):
        history.clear()
    with pytest.raises(NotImplementedError, match="new session id"):
        asyncio.run(history.aclear())
    assert stored("keep") == [("user", "hello"), ("assistant", "hi")]


def test_a_refused_turn_inside_a_chain_is_logged_by_langchain_and_not_stored(
        caplog: pytest.LogCaptureFixture) -> None:
    # LangChain runs add_messages in a callback and logs its errors instead of
    # raising: the reply still comes back, and nothing of the turn is stored.
    bad = {**TOOL_CALL, "id": "not a valid id"}
    model = GenericFakeChatModel(messages=iter([AIMessage("", tool_calls=[bad])]))
    chat = RunnableWithMessageHistory(model, lambda sid: RecapChatMessageHistory(sid))
    with caplog.at_level(logging.WARNING):
        reply = chat.invoke("Weather in Lisbon?", config={"configurable": {"session_id": "t"}})
    assert reply.tool_calls
    assert "id: String should match pattern" in caplog.text
    assert stored("t") == []


def test_a_tool_turn_inside_a_chain_is_stored_as_blocks() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("", tool_calls=[TOOL_CALL])]))
    chat = RunnableWithMessageHistory(model, lambda sid: RecapChatMessageHistory(sid))
    reply = chat.invoke("Weather in Lisbon?", config={"configurable": {"session_id": "t2"}})
    assert reply.tool_calls
    RecapChatMessageHistory("t2").add_messages([ToolMessage("18C", tool_call_id="call_1")])
    got = RecapChatMessageHistory("t2").messages
    assert [type(m).__name__ for m in got] == ["HumanMessage", "AIMessage", "ToolMessage"]
    assert isinstance(got[1], AIMessage) and got[1].tool_calls[0]["args"] == {"city": "Lisbon"}


def test_async_chain_uses_the_same_history() -> None:
    chat, seen = make_chat(lambda sid: RecapChatMessageHistory(sid))

    async def two_turns() -> None:
        for q in QUESTIONS[:2]:
            await chat.ainvoke({"question": q}, config=CONFIG)

    asyncio.run(two_turns())
    assert stored("lc") == [("user", QUESTIONS[0]), ("assistant", REPLIES[0]),
                            ("user", QUESTIONS[1]), ("assistant", REPLIES[1])]
    assert pairs(seen[1]) == [("system", APP_PROMPT), ("human", QUESTIONS[0]),
                              ("ai", REPLIES[0]), ("human", QUESTIONS[1])]


@pytest.mark.unit
def test_the_adapter_loads_no_sdk_summarizer_jobs_or_celery_worker() -> None:
    modules = loaded_after("import recap.integrations.langchain")
    assert "langchain_core.chat_history" in modules
    assert forbidden(modules) == []
