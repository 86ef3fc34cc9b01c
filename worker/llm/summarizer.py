"""Summarizers: Claude (the real one) and an offline extractive stand-in.

A summarizer folds turns into the running summary, chunk by chunk. The caller
may pass a :class:`~recap.llm.client.Usage` to learn what the calls spent, also
when a later call fails.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from recap.core import guard
from recap.core.memories import Fact
from recap.core.prompt import SYSTEM_PROMPT, Turn, cap_summary, chunk_turns, render
from recap.errors import PromptTooLong, UnusableSummary
from recap.llm.client import ClientConfig, Usage, complete, estimate_turns
from recap.llm.structured import (
    FACTS_INSTRUCTION,
    KNOWN_INSTRUCTION,
    fact_room,
    known_block,
    parse_answer,
    summary_tool,
    tool_texts,
)

OFFLINE_MODEL = "offline-extractive"
# A chunk smaller than this that is still "too long" means the limit is not ours
# to fix by splitting further.
MIN_CHUNK_TOKENS = 500
# A chunk this small whose summary-and-facts answer is still cut off is not ours to
# fix by splitting.
MIN_SPLIT_TOKENS = 200


@dataclass
class SummaryResult:
    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    estimated_input_tokens: int = 0
    facts: list[Fact] = field(default_factory=list)  # mined in the same calls (facts=True)

    @classmethod
    def of(cls, text: str, usage: Usage, facts: Sequence[Fact] = ()) -> SummaryResult:
        return cls(text, usage.model, usage.input_tokens, usage.output_tokens, usage.calls,
                   usage.estimated_input_tokens, list(facts))


class CutOff(UnusableSummary):
    """A summary-and-facts answer cut off at max_tokens: its chunk is split."""


# A chunk whose summary-and-facts answer ran away (cut off, too small to split)
# gets a second, cheaper chance: its summary alone, then its facts with this
# smaller share of the usual room for facts; facts cut off again are dropped (the
# retention guard keeps their specifics in the details section or memories).
FALLBACK_FACT_SHARE = 4


class Summarizer(Protocol):
    @property
    def model(self) -> str: ...

    def summarize(self, previous: str | None, turns: Sequence[Turn], *,
                  usage: Usage | None = None, facts: bool = False,
                  known: Sequence[tuple[int, str]] = ()) -> SummaryResult: ...

    def repair(self, summary: str, items: Sequence[str], *, usage: Usage) -> str | None: ...


@dataclass
class ClaudeSummarizer:
    """Folds turns into the running summary with the Messages API, chunk by chunk.

    With ``facts``, each call also mines the chunk's durable facts (one tool call,
    recap.llm.structured); an answer cut off at max_tokens then splits its chunk.
    """

    config: ClientConfig
    max_tokens: int
    template: str

    @property
    def model(self) -> str:
        return self.config.model

    def summarize(self, previous: str | None, turns: Sequence[Turn], *,
                  usage: Usage | None = None, facts: bool = False,
                  known: Sequence[tuple[int, str]] = ()) -> SummaryResult:
        """``known``: (id, fact) of stored memories the mining may mark as replaced."""
        usage = usage if usage is not None else Usage(self.model)
        count = self.config.count
        # Room for the turns: the input limit minus the prompt, the summary so far
        # (which can grow to max_tokens) and the answer.
        fixed = count(self.template) + count(SYSTEM_PROMPT) + 2 * self.max_tokens
        room = max(MIN_CHUNK_TOKENS,
                   self.config.max_input_tokens - fixed - count(previous or ""))
        mined: dict[str, Fact] | None = {} if facts else None
        text = self._fold(previous or "", list(turns), room, usage, mined, tuple(known))
        return SummaryResult.of(text, usage, list((mined or {}).values()))

    def repair(self, summary: str, items: Sequence[str], *, usage: Usage) -> str | None:
        """The retention guard's one repair call: ``summary`` revised to include the
        specifics of ``items`` (guard.entry lines); None when the answer is unusable
        (empty, or cut off at max_tokens), so the caller settles with ``summary``."""
        answer = complete(self.config, max_tokens=self.max_tokens, system=SYSTEM_PROMPT,
                          prompt=guard.repair_prompt(summary, items),
                          operation="repair_summary")
        answer.add_to(usage)
        if answer.stop_reason == "max_tokens" or not answer.text:
            return None
        return self._capped(answer.text)

    def _capped(self, text: str) -> str:
        """``text`` within the summary's cap (recap.core.prompt.cap_summary)."""
        return cap_summary(text, max_tokens=self.max_tokens, count=self.config.count,
                           split=self.config.split)

    def _fold(self, text: str, turns: list[Turn], room: int, usage: Usage,
              mined: dict[str, Fact] | None, known: tuple[tuple[int, str], ...] = ()) -> str:
        count = self.config.count
        for chunk in chunk_turns(turns, max_tokens=room, count=count, split=self.config.split):
            try:
                text = self._call(text, chunk, usage, mined, known)
            except (PromptTooLong, CutOff) as exc:
                # Our estimate was low for this text, or its facts did not fit the
                # answer: halve the chunk and go on.
                half = min(room, sum(count(t.content) + 12 for t in chunk)) // 2
                if isinstance(exc, CutOff) and half < MIN_SPLIT_TOKENS:
                    text = self._fallback(text, chunk, usage, mined, known)
                    continue
                if half < MIN_CHUNK_TOKENS and isinstance(exc, PromptTooLong):
                    raise
                text = self._fold(text, chunk, half, usage, mined, known)
        return text

    def _fallback(self, previous: str, chunk: Sequence[Turn], usage: Usage,
                  mined: dict[str, Fact] | None, known: tuple[tuple[int, str], ...]) -> str:
        """A runaway summary-and-facts answer on a chunk too small to split: the summary
        alone (UnusableSummary if that is cut off too), then the facts with a smaller
        room; facts cut off again are dropped. Noted in ``usage.notes``."""
        text = self._call(previous, chunk, usage, None)
        if mined is None:
            usage.notes.append("answer cut off: summary-only fallback")
            return text
        room = fact_room(sum(self.config.count(t.content) for t in chunk))
        try:
            self._call(previous, chunk, usage, mined, known,
                       fact_tokens=room // FALLBACK_FACT_SHARE)
            usage.notes.append("answer cut off: summary-only fallback, facts with a smaller cap")
        except CutOff:
            usage.notes.append("answer cut off: summary-only fallback, runaway facts dropped")
        return text

    def _call(self, previous: str, chunk: Sequence[Turn], usage: Usage,
              mined: dict[str, Fact] | None, known: tuple[tuple[int, str], ...] = (), *,
              fact_tokens: int | None = None) -> str:
        prompt = render(self.template, previous_summary=previous or None, turns=chunk)
        count = self.config.count
        cap = self.max_tokens
        estimate = (count(SYSTEM_PROMPT) + count(self.template) + count(previous)
                    + estimate_turns(chunk, count))
        if mined is not None:
            instruction = FACTS_INSTRUCTION + known_block(known)
            prompt += instruction
            estimate += count(instruction)
            cap += (fact_room(sum(count(t.content) for t in chunk)) if fact_tokens is None
                    else fact_tokens)
        answer = complete(self.config, max_tokens=cap, system=SYSTEM_PROMPT, prompt=prompt,
                          operation="summarize", estimate=estimate,
                          tool=None if mined is None else summary_tool(self.max_tokens))
        answer.add_to(usage)
        if answer.stop_reason == "max_tokens":
            cut = CutOff if mined is not None else UnusableSummary
            raise cut(f"summary cut off at max_tokens={cap}; not applied "
                      f"(answer {answer_digest(answer.text, answer.tool_input)})")
        text = answer.text
        if mined is not None:
            try:
                text, facts = parse_answer(answer.tool_input, known={i for i, _ in known})
            except UnusableSummary as exc:
                raise UnusableSummary(f"{exc} (answer "
                                      f"{answer_digest(answer.text, answer.tool_input)})") from None
            for fact in facts:
                mined.setdefault(fact.fact, fact)
        if not text:
            raise UnusableSummary("the model returned an empty summary; not applied "
                                  f"(answer {answer_digest(answer.text, answer.tool_input)})")
        return self._capped(text)


def answer_digest(text: str, tool_input: object) -> str:
    """A short digest of one answer, in the error of an unusable one: the same digest
    on the next attempt means the server answers this request deterministically,
    and retrying it again would only spend more."""
    raw = text + "\x00" + json.dumps(tool_input, sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def sent_texts(summarizer: Summarizer) -> tuple[str, ...]:
    """What ``summarizer`` itself sends besides the conversation (system prompt,
    template, instructions, the tool schema's descriptions, the repair prompt): a
    model that echoes any of it is not telling Recap a specific (recap.core.echo)."""
    if not isinstance(summarizer, ClaudeSummarizer):
        return ()
    return _sent_texts(summarizer.template, summarizer.max_tokens)


@functools.lru_cache(maxsize=16)
def _sent_texts(template: str, max_tokens: int) -> tuple[str, ...]:
    # The same few texts on every job of a process: walking the tool schema each
    # time, and flattening the result again (recap.core.echo), cost CPU for nothing.
    return (SYSTEM_PROMPT, template, FACTS_INSTRUCTION, KNOWN_INSTRUCTION,
            guard.REPAIR_PROMPT, *tool_texts(summary_tool(max_tokens)))


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
                  usage: Usage | None = None, facts: bool = False,
                  known: Sequence[tuple[int, str]] = ()) -> SummaryResult:
        """``facts`` and ``known`` are accepted and ignored: the stand-in mines nothing."""
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

    def repair(self, summary: str, items: Sequence[str], *, usage: Usage) -> str | None:
        """No model to ask: the retention guard settles what is missing by itself."""
        return None
