"""The peers, run inline as their docs show, against the same Claude stand-in.

- LangMem ``summarize_messages`` (langmem.short_term), called before every model
  call with the running summary carried between calls;
- LangChain's ``SummarizationMiddleware.before_model`` (langchain.agents.middleware),
  whose state update replaces the history with summary + kept messages.

Both get ``langchain_anthropic.ChatAnthropic`` pointed at the stand-in and a
tiktoken counter (Recap's own), so thresholds are in the same units. Settings
mirror Recap's defaults: a 32,000-token budget, summarize at 80% of it (25,600),
summaries up to 1,024 tokens, LangChain keeps the newest 10 messages.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

BUDGET = 32_000
TRIGGER = 25_600
SUMMARY_TOKENS = 1_024
KEEP = 10


@dataclass
class PeerRun:
    name: str
    waits: list[float] = field(default_factory=list)  # seconds per model call
    context: list[int] = field(default_factory=list)  # tokens sent per model call
    sent: list[list[Any]] = field(default_factory=list)  # the messages of each model call
    calls: int = 0  # summarization calls
    condensed: int = 0  # messages replaced by a summary
    input_tokens: int = 0  # of the summarization calls, as the API reported them
    output_tokens: int = 0
    error: str | None = None


Observer = Callable[[str], None]  # the text of a peer's context (summary + kept messages)


def _ignore(_: str) -> None:
    return None


def _text(messages: Iterable[Any]) -> str:
    return "\n".join(m.content if isinstance(m.content, str) else str(m.content)
                     for m in messages)


def _usage(run: PeerRun) -> Any:
    """A LangChain callback adding each call's API-reported usage to ``run``."""
    from langchain_core.callbacks import BaseCallbackHandler

    class Usage(BaseCallbackHandler):
        def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            for generations in response.generations:
                for g in generations:
                    meta = getattr(getattr(g, "message", None), "usage_metadata", None) or {}
                    run.input_tokens += int(meta.get("input_tokens", 0))
                    run.output_tokens += int(meta.get("output_tokens", 0))

    return Usage()


def _model(base_url: str | None, run: PeerRun | None = None) -> Any:
    from langchain_anthropic import ChatAnthropic

    from recap.settings import DEFAULT_MODEL

    # Keyword names as documented; ChatAnthropic's pydantic aliases confuse mypy.
    options: dict[str, Any] = {"model": DEFAULT_MODEL, "base_url": base_url,
                               "api_key": "sk-ant-bench", "max_tokens": SUMMARY_TOKENS,
                               "max_retries": 0, "timeout": 60}
    if base_url is None:  # the real API, with the environment's key (recap eval)
        del options["base_url"], options["api_key"]
    if run is not None:
        options["callbacks"] = [_usage(run)]
    return ChatAnthropic(**options)


def _counter() -> Callable[[Iterable[Any]], int]:
    from recap.llm.tokens import count_tokens

    # Both peers re-count the whole history before every call: memoize per text.
    cached = functools.lru_cache(maxsize=65_536)(count_tokens)

    def count(messages: Iterable[Any]) -> int:
        return sum(cached(m.content if isinstance(m.content, str) else str(m.content))
                   for m in messages)

    return count


def _message(i: int, role: str, content: str) -> Any:
    from langchain_core.messages import AIMessage, HumanMessage

    cls = HumanMessage if role == "user" else AIMessage
    return cls(content=content, id=f"m{i}")


def _user_first(model: Any) -> Any:
    """``model`` behind a one-line fix: prepend a user turn when the input starts with the AI's.

    LangMem sends the messages to summarize as they are; after a first summary that
    ended on a user turn, the next batch starts with an assistant turn, which the
    Messages API (and the stand-in) refuse: "first message must use the user role".
    """
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.runnables import RunnableLambda

    def invoke(messages: list[Any]) -> Any:
        if messages and isinstance(messages[0], AIMessage):
            messages = [HumanMessage(content="(conversation continues)"), *messages]
        return model.invoke(messages)

    return RunnableLambda(invoke)


def run_langmem(script: Sequence[tuple[str, str]], base_url: str | None, *,
                fix_first_turn: bool = True, on_fold: Observer = _ignore,
                on_context: Observer = _ignore) -> PeerRun:
    """summarize_messages before each model call (after each user message).

    ``fix_first_turn=False`` runs LangMem exactly as documented (it fails here; see
    :func:`_user_first`).
    """
    from langmem.short_term import summarize_messages

    run = PeerRun("LangMem summarize_messages" + (" (+ user-first fix)" if fix_first_turn
                                                  else " (as documented)"))
    count = _counter()
    model = _model(base_url, run)
    model = _user_first(model) if fix_first_turn else model
    history: list[Any] = []
    summary = None
    try:
        for i, (role, content) in enumerate(script):
            history.append(_message(i, role, content))
            if role != "user":
                continue
            t0 = time.perf_counter()
            result = summarize_messages(history, running_summary=summary, model=model,
                                        max_tokens=BUDGET, max_tokens_before_summary=TRIGGER,
                                        max_summary_tokens=SUMMARY_TOKENS, token_counter=count)
            run.waits.append(time.perf_counter() - t0)
            folded = (result.running_summary is not summary
                      and result.running_summary is not None)
            summary = result.running_summary
            run.condensed = len(summary.summarized_message_ids) if summary else 0
            run.context.append(count(result.messages))
            run.sent.append(list(result.messages))
            on_context(_text(result.messages))
            if folded:
                run.calls += 1
                on_fold(_text(result.messages))
    except Exception as exc:  # report the peer's failure, keep the other figures
        run.error = f"{type(exc).__name__}: {exc}"
    return run


def run_langchain(script: Sequence[tuple[str, str]], base_url: str | None, *,
                  on_fold: Observer = _ignore, on_context: Observer = _ignore) -> PeerRun:
    """SummarizationMiddleware.before_model before each model call; state updated like an agent."""
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.messages import RemoveMessage

    run = PeerRun("LangChain SummarizationMiddleware")
    count = _counter()
    try:
        middleware = SummarizationMiddleware(_model(base_url, run), trigger=("tokens", TRIGGER),
                                             keep=("messages", KEEP), token_counter=count)
        state: list[Any] = []
        for i, (role, content) in enumerate(script):
            state.append(_message(i, role, content))
            if role != "user":
                continue
            t0 = time.perf_counter()
            update = middleware.before_model({"messages": state}, None)  # type: ignore[arg-type]
            run.waits.append(time.perf_counter() - t0)
            if update:
                run.calls += 1
                new = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
                run.condensed += len(state) - (len(new) - 1)  # minus the summary message
                state = new
                on_fold(_text(state))
            run.context.append(count(state))
            run.sent.append(list(state))
            on_context(_text(state))
    except Exception as exc:  # report the peer's failure, keep the other figures
        run.error = f"{type(exc).__name__}: {exc}"
    return run


PEERS = (run_langmem, run_langchain)
AS_DOCUMENTED = functools.partial(run_langmem, fix_first_turn=False)
