"""RecapMiddleware in a real ``create_agent`` agent (LangGraph, an in-memory
checkpointer), a recording fake chat model, a real Celery worker and the
Messages API stand-in: a tool-using conversation that folds at least twice."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from recap.errors import InvalidInput
from recap.integrations.langchain_middleware import RecapMiddleware, complete_prefix
from tests.integrations.common import (
    THRESHOLDS,
    TURNS,
    applied,
    drain,
    keys,
    stored_total,
    summary,
)
from tests.integrations.lc_fakes import (
    RecordingChatModel,
    assert_pairs_intact,
    question,
    script,
    weather,
)

pytestmark = pytest.mark.usefixtures("celery_worker_thread")
SYSTEM = "You are a weather assistant."


def _agent(model: RecordingChatModel, **kw: Any) -> Any:
    # A transient model error on one call, retried by LangChain's own middleware:
    # the retried call must not make Recap store anything twice.
    return create_agent(model, [weather], system_prompt=SYSTEM, checkpointer=InMemorySaver(),
                        middleware=[RecapMiddleware(**kw), ModelRetryMiddleware(
                            max_retries=1, initial_delay=0, jitter=False)])


def test_the_agent_reads_the_summary_after_two_folds(settings_env: Callable[..., None]) -> None:
    settings_env(**THRESHOLDS)
    sid = "lc-sync"
    model = RecordingChatModel(messages=iter(script(TURNS + 1)), fail_at={5})
    agent = _agent(model)
    config = {"configurable": {"thread_id": sid}}
    for i in range(TURNS):
        agent.invoke({"messages": [{"role": "user", "content": question(i)}]}, config)
        drain()
    assert applied(sid) >= 2
    first_call = len(model.seen)
    expected_summary = summary(sid)
    agent.invoke({"messages": [{"role": "user", "content": question(TURNS)}]}, config)
    assert expected_summary in model.seen[first_call][0].text
    drain()
    messages = agent.get_state(config).values["messages"]
    # Every message of the thread stored exactly once (the retried call included).
    assert stored_total(sid) == len(messages) == 4 * (TURNS + 1)
    assert keys(sid) == len(messages)
    _check_last_turn_before(sid, model, first_call, expected_summary)


def _check_last_turn_before(sid: str, model: RecordingChatModel, first_call: int,
                            expected: str) -> None:
    sent = model.seen[first_call]
    assert isinstance(sent[0], SystemMessage)
    assert SYSTEM in sent[0].text and expected in sent[0].text
    body = "\n".join(m.text for m in sent[1:])
    assert f"q{TURNS}x" in body
    assert "q0x" not in body and "q1x" not in body  # folded by the first two folds
    for call in model.seen:
        assert_pairs_intact([m for m in call if not isinstance(m, SystemMessage)])


def test_a_retried_step_stores_nothing_twice(settings_env: Callable[..., None]) -> None:
    settings_env(**THRESHOLDS)
    sid = "lc-retry"
    model = RecordingChatModel(messages=iter(script(3)))
    agent = _agent(model)
    config = {"configurable": {"thread_id": sid}}
    for i in range(2):
        agent.invoke({"messages": [{"role": "user", "content": question(i)}]}, config)
    drain()
    state = agent.get_state(config).values
    before = stored_total(sid)
    assert before == len(state["messages"]) == 8
    # The step runs again from a state that does not know what was stored (a crash
    # after Recap's commit and before LangGraph's checkpoint).
    again = RecapMiddleware(sid)
    replay = cast(Any, {**state, "recap_stored": 0})
    assert again.after_agent(replay, cast(Any, None)) == {"recap_stored": 8}
    assert stored_total(sid) == before


def test_ainvoke_uses_the_asyncio_api_and_folds_the_same(settings_env: Callable[..., None]
                                                         ) -> None:
    settings_env(**THRESHOLDS)
    sid = "lc-async"
    model = RecordingChatModel(messages=iter(script(TURNS + 1)), fail_at={3})
    agent = _agent(model, session_id=sid)  # a fixed session: no thread_id needed
    config = {"configurable": {"thread_id": "another-thread"}}

    async def conversation() -> None:
        from recap.api import aio

        for i in range(TURNS + 1):
            await agent.ainvoke({"messages": [HumanMessage(question(i))]}, config)
            drain()
        await aio.close()

    asyncio.run(conversation())
    assert applied(sid) >= 2
    messages = agent.get_state(config).values["messages"]
    assert stored_total(sid) == len(messages) == 4 * (TURNS + 1)
    sent = model.seen[-2]  # the last turn's first call, after the last fold but one
    body = "\n".join(m.text for m in sent[1:])
    assert "q0x" not in body and "q1x" not in body and f"q{TURNS}x" in body
    assert "<SUMMARY_OF_PRIOR_CONTEXT>" in sent[0].text
    for call in model.seen:
        assert_pairs_intact([m for m in call if not isinstance(m, SystemMessage)])


def test_a_run_without_session_or_thread_is_refused_before_the_model() -> None:
    model = RecordingChatModel(messages=iter(script(1)))
    agent = create_agent(model, [weather], middleware=[RecapMiddleware()])
    with pytest.raises(InvalidInput, match="thread_id"):
        agent.invoke({"messages": [HumanMessage("hi")]})
    assert model.seen == []


def test_a_tool_turn_waits_for_all_its_results() -> None:
    from langchain_core.messages import AIMessage, ToolMessage

    call = AIMessage("", tool_calls=[{"name": "w", "args": {}, "id": "a"},
                                     {"name": "w", "args": {}, "id": "b"}])
    msgs = [HumanMessage("q"), call, ToolMessage("1", tool_call_id="a")]
    assert complete_prefix(msgs, 0) == (msgs[:1], 1)
    full = [*msgs, ToolMessage("2", tool_call_id="b"), AIMessage("done")]
    assert complete_prefix(full, 1) == (full[1:], 5)
    assert complete_prefix(full, 9) == (full, 5)  # messages removed: start over (keys dedup)


def test_the_old_chat_history_warns_once_and_points_at_the_middleware(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    from recap.integrations import langchain as old

    monkeypatch.setitem(old.WARNED, "done", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old.RecapChatMessageHistory("old-1")
        old.RecapChatMessageHistory("old-2")
    mine = [w for w in caught if "RecapChatMessageHistory is deprecated" in str(w.message)]
    assert len(mine) == 1 and mine[0].category is DeprecationWarning
    assert "RecapMiddleware" in str(mine[0].message)


def test_a_tool_step_reuses_the_turns_context_unless_it_must_read_again() -> None:
    from langchain_core.messages import AIMessage, ToolMessage

    from recap.integrations.langchain_middleware import TurnContext, extend_context

    human = HumanMessage("q", id="h1")
    call = AIMessage("", tool_calls=[{"name": "w", "args": {"city": "Lisbon"}, "id": "c1"}],
                     id="a1")
    result = ToolMessage("sunny", tool_call_id="c1", id="t1")
    kept = TurnContext("h1", "prompt", None, [HumanMessage("summary-era window")], room=100)
    state = [human, call, result]
    assert extend_context(kept, state, "prompt", len) == [kept.messages[0], call, result]
    assert extend_context(kept, [*state, HumanMessage("next", id="h2")], "prompt", len) is None
    assert extend_context(kept, state, "another prompt", len) is None
    over = TurnContext("h1", "prompt", None, [], room=3)  # the step's messages do not fit
    assert extend_context(over, state, "prompt", len) is None
    assert extend_context(TurnContext("gone", "prompt", None, [], 100), state, "prompt",
                          len) is None


def test_each_tool_step_extends_its_turns_first_input(settings_env: Callable[..., None]
                                                      ) -> None:
    settings_env(**THRESHOLDS)
    model = RecordingChatModel(messages=iter(script(3)))
    agent = _agent(model)
    config = {"configurable": {"thread_id": "lc-steps"}}
    for i in range(3):
        agent.invoke({"messages": [HumanMessage(question(i))]}, config)
    for first, step in zip(model.seen[0::2], model.seen[1::2], strict=True):
        assert step[:len(first)] == first  # the same context, the step's messages after it
        assert [type(m).__name__ for m in step[len(first):]] == ["AIMessage", "ToolMessage"]
