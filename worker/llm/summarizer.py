"""Summarizers: Claude (the real one) and an offline extractive stand-in.

A summarizer folds turns into the running summary, chunk by chunk. The caller
may pass a :class:`~worker.llm.client.Usage` to learn what the calls spent, also
when a later call fails.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from worker.core.prompt import SYSTEM_PROMPT, Turn, chunk_turns, render
from worker.errors import PromptTooLong, UnusableSummary
from worker.llm.client import ClientConfig, Usage, complete, estimate_turns

OFFLINE_MODEL = "offline-extractive"
# A chunk smaller than this that is still "too long" means the limit is not ours
# to fix by splitting further.
MIN_CHUNK_TOKENS = 500


@dataclass
class SummaryResult:
    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    estimated_input_tokens: int = 0

    @classmethod
    def of(cls, text: str, usage: Usage) -> SummaryResult:
        return cls(text, usage.model, usage.input_tokens, usage.output_tokens, usage.calls,
                   usage.estimated_input_tokens)


class Summarizer(Protocol):
    @property
    def model(self) -> str: ...

    def summarize(self, previous: str | None, turns: Sequence[Turn], *,
                  usage: Usage | None = None) -> SummaryResult: ...


@dataclass
class ClaudeSummarizer:
    """Folds turns into the running summary with the Messages API, chunk by chunk."""

    config: ClientConfig
    max_tokens: int
    template: str

    @property
    def model(self) -> str:
        return self.config.model

    def summarize(self, previous: str | None, turns: Sequence[Turn], *,
                  usage: Usage | None = None) -> SummaryResult:
        usage = usage if usage is not None else Usage(self.model)
        count = self.config.count
        # Room for the turns: the input limit minus the prompt, the summary so far
        # (which can grow to max_tokens) and the answer.
        fixed = count(self.template) + count(SYSTEM_PROMPT) + 2 * self.max_tokens
        room = max(MIN_CHUNK_TOKENS,
                   self.config.max_input_tokens - fixed - count(previous or ""))
        text = self._fold(previous or "", list(turns), room, usage)
        return SummaryResult.of(text, usage)

    def _fold(self, text: str, turns: list[Turn], room: int, usage: Usage) -> str:
        for chunk in chunk_turns(turns, max_tokens=room, count=self.config.count,
                                 split=self.config.split):
            try:
                text = self._call(text, chunk, usage)
            except PromptTooLong:
                # Our estimate was low for this text: halve the chunk and go on.
                if room // 2 < MIN_CHUNK_TOKENS:
                    raise
                text = self._fold(text, chunk, room // 2, usage)
        return text

    def _call(self, previous: str, chunk: Sequence[Turn], usage: Usage) -> str:
        prompt = render(self.template, previous_summary=previous or None, turns=chunk)
        count = self.config.count
        answer = complete(self.config, max_tokens=self.max_tokens, system=SYSTEM_PROMPT,
                          prompt=prompt, operation="summarize",
                          estimate=count(SYSTEM_PROMPT) + count(self.template)
                          + count(previous) + estimate_turns(chunk, count))
        answer.add_to(usage)
        if answer.stop_reason == "max_tokens":
            raise UnusableSummary(f"summary cut off at max_tokens={self.max_tokens}; "
                                  "not applied")
        if not answer.text:
            raise UnusableSummary("the model returned an empty summary; not applied")
        return answer.text


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass
class OfflineSummarizer:
    """An extractive stand-in that needs no network. Not Claude: labelled as such.

    It keeps the first sentence of each message (clipped) after the previous
    summary, and drops the oldest lines once over ``max_words``.
    """

    model: str = OFFLINE_MODEL
    max_words: int = 400

    def summarize(self, previous: str | None, turns: Sequence[Turn], *,
                  usage: Usage | None = None) -> SummaryResult:
        lines = [ln for ln in (previous or "").splitlines() if ln.strip()]
        for t in turns:
            first = _SENTENCE.split(" ".join(t.content.split()), maxsplit=1)[0]
            words = first.split()
            clipped = " ".join(words[:30]) + (" ..." if len(words) > 30 else "")
            who = "The user" if t.role == "user" else f"The {t.role}"
            lines.append(f"- {who} said: {clipped}")
        while len(lines) > 1 and sum(len(ln.split()) for ln in lines) > self.max_words:
            lines.pop(0)
        text = "\n".join(lines).strip()
        if not text:
            raise UnusableSummary("offline summarizer produced no text")
        if usage is not None:
            usage.calls += 1
        return SummaryResult(text=text, model=self.model, calls=1)
