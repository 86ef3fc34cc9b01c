"""The real-model server's figures per call and its token count, over a fake of
llama-cpp-python's ``Llama`` (no model file, no llama-cpp-python)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.realmodel.server import CallStats, LlamaBackend, call_line, stats_of

pytestmark = pytest.mark.unit


class FakeLlama:
    """What LlamaBackend uses of ``Llama``: a completion that reads the prompt's
    uncached part in one eval and each generated token in one more, and a chat
    handler that tokenizes one token per word."""

    chat_handler = None
    chat_format = "fake"

    def __init__(self, cached: int) -> None:
        self.cached = cached
        self.evals: list[int] = []
        self._chat_handlers = {"fake": self._handler}

    def eval(self, tokens: Any) -> None:
        self.evals.append(len(tokens))

    def create_chat_completion(self, **kwargs: Any) -> dict[str, Any]:
        prompt = self.tokenize(" ".join(m["content"] for m in kwargs["messages"]).encode())
        self.eval(prompt[self.cached:])
        for token in range(3):
            self.eval([token])
        return {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": 3}}

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return list(range(len(text.split())))

    def _handler(self, *, llama: Any, messages: list[dict[str, str]], **_: Any) -> Any:
        text = " ".join(f"<{m['role']}> {m['content']}" for m in messages)
        return llama.create_completion(prompt=llama.tokenize(text.encode()), max_tokens=1)


def test_each_call_counts_the_cached_prefix_and_the_tokens_generated() -> None:
    llm = FakeLlama(cached=4)
    backend = LlamaBackend(llm)
    backend.create_chat_completion(messages=[{"role": "user", "content": "a b c d e f"}])
    assert backend.last is not None
    assert (backend.last.prompt_tokens, backend.last.reused, backend.last.generated) == (6, 4, 3)
    assert llm.evals == [2, 1, 1, 1]
    assert "eval" not in vars(llm)  # the class's eval again, once the call is over


def test_count_prompt_counts_the_chat_template_s_prompt_without_completing_it() -> None:
    llm = FakeLlama(cached=0)
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert LlamaBackend(llm).count_prompt(messages) == 5  # "<system> be brief <user> hi"
    assert llm.evals == []


def test_stats_split_the_prompt_read_from_generation() -> None:
    stats = stats_of([(100, 0.5), (1, 0.6), (1, 0.7)], prompt_tokens=400, generated=2,
                     seconds=1.0)
    assert stats == CallStats(400, 300, 0.5, 2, 0.5)
    # A prompt the model's state already held whole: nothing read.
    assert stats_of([], prompt_tokens=50, generated=0, seconds=0.1).reused == 50


def test_the_call_line_names_each_figure() -> None:
    line = call_line(CallStats(400, 300, 0.5, 20, 2.0), {}, "tool_use", 2.5)
    assert line == ("prompt 400 tok (300 cached), 200.0 tok/s; generated 20 tok, "
                    "10.0 tok/s; tool_use; 2.5s")
    assert call_line(None, {"input_tokens": 5, "output_tokens": 1}, "end_turn", 1.0) == (
        "5 in, 1 out, end_turn, 1.0s")
    assert "-" in call_line(CallStats(10, 10, 0.0, 0, 0.0), {}, "end_turn", 0.0)
