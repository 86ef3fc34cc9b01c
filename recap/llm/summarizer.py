"""The summarizer: Claude folds turns into the running summary, chunk by chunk (the
offline stand-in: recap.llm.offline). The caller may pass a
:class:`~recap.llm.client.Usage` to learn what the calls spent, also when a later
call fails."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from recap import progress
from recap.core.memories.facts import Fact
from recap.core.prompts.frozen import frozen as frozen_reason
from recap.core.prompts.summarize import SYSTEM_PROMPT, Turn, cap_summary, chunk_turns, render
from recap.core.retention import guard, repairs
from recap.errors import PromptTooLong, UnusableSummary
from recap.llm import calibrate
from recap.llm.client import ClientConfig, Usage, answer_digest, complete, estimate_turns
from recap.llm.structured import (
    FACTS_INSTRUCTION,
    FACTS_PROMPT,
    FACTS_SYSTEM,
    KNOWN_INSTRUCTION,
    MAX_FACT_TOKENS,
    TOOL_NAME,
    fact_room,
    facts_prompt,
    facts_tool,
    known_block,
    parse_answer,
    parse_facts,
    summary_tool,
    tool_texts,
)

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
    frozen: int = 0  # answers refused as frozen or empty, asked again
    resends: int = 0  # times the batch was sent again after an unusable answer
    resend_input_tokens: int = 0  # the input tokens of those calls

    @classmethod
    def of(cls, text: str, usage: Usage, facts: Sequence[Fact] = ()) -> SummaryResult:
        return cls(text, usage.model, usage.input_tokens, usage.output_tokens, usage.calls,
                   usage.estimated_input_tokens, list(facts), usage.frozen, usage.resends,
                   usage.resend_input_tokens)


class CutOff(UnusableSummary):
    """A summary-and-facts answer cut off at max_tokens. ``summary``: the answer's
    summary when it was whole (the facts ran away): kept, and only the facts are
    asked again; None: its chunk is split."""

    def __init__(self, message: str, *, summary: str | None = None) -> None:
        super().__init__(message)
        self.summary = summary


class ResendsSpent(UnusableSummary):
    """The job sent its batch again as often as RECAP_MAX_RESENDS allows: no more."""


# The resends one job may make unless told otherwise (RECAP_MAX_RESENDS).
MAX_RESENDS = 3


# The ways a chunk is folded, tried in order after a frozen or empty answer: one
# forced record_summary call (summary and facts); the summary as plain text, facts
# apart (where RECAP_SUMMARY_MODE=plain and jobs without memories start); the new
# messages summarized alone, after the previous summary.
WAYS = ("tool", "plain", "fresh")


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
    ``plain`` (RECAP_SUMMARY_MODE=plain): the summary as plain text, facts apart.
    """

    config: ClientConfig
    max_tokens: int
    template: str
    plain: bool = False
    # RECAP_MAX_RESENDS: times a job may send its batch again after an unusable answer.
    max_resends: int = MAX_RESENDS
    # RECAP_MAX_FACTS_TOKENS: the most answer room added for a call's facts.
    max_facts_tokens: int = MAX_FACT_TOKENS

    @property
    def model(self) -> str:
        return self.config.model

    def summarize(self, previous: str | None, turns: Sequence[Turn], *,
                  usage: Usage | None = None, facts: bool = False,
                  known: Sequence[tuple[int, str]] = ()) -> SummaryResult:
        """``known``: (id, fact) of stored memories the mining may mark as replaced."""
        usage = usage if usage is not None else Usage(self.model)
        room = self.chunk_room(previous, self.token_ratio(previous, turns))
        mined: dict[str, Fact] | None = {} if facts else None
        text = self._fold(previous or "", list(turns), room, usage, mined, tuple(known),
                          reported=True)
        return SummaryResult.of(text, usage, list((mined or {}).values()))

    def chunk_room(self, previous: str | None, ratio: float) -> int:
        """Recap's tokens of turns one request carries: the input limit minus the
        summary so far (which can grow to max_tokens) and the answer, in the model's
        tokens, less the prompt; ``ratio`` is the model's tokens per Recap's
        (recap.llm.calibrate)."""
        count = self.config.count
        fixed = count(self.template) + count(SYSTEM_PROMPT) + count(previous or "")
        model_room = self.config.max_input_tokens - 2 * self.max_tokens
        return max(MIN_CHUNK_TOKENS, math.floor(model_room / ratio) - fixed)

    def token_ratio(self, previous: str | None, turns: Sequence[Turn]) -> float:
        """The model's tokens per Recap's (recap.llm.calibrate), learnt from the first
        request of ``turns`` unless known: 1 when calibration is off or the server
        does not count tokens."""
        if not self.config.calibrate:
            return 1.0
        known = calibrate.known_ratio(self.config)
        if known is not None:
            return known
        chunks = chunk_turns(list(turns), max_tokens=self.chunk_room(previous, 1.0),
                             count=self.config.count, split=self.config.split)
        prompt = render(self.template, previous_summary=previous or None,
                        turns=chunks[0] if chunks else [])
        return calibrate.token_ratio(self.config, system=SYSTEM_PROMPT, prompt=prompt)

    def repair(self, summary: str, items: Sequence[str], *, usage: Usage) -> str | None:
        """The retention guard's one repair call: ``summary`` revised to include the
        specifics of ``items`` (guard.entry lines); None when the answer is unusable
        (empty, or cut off at max_tokens), so the caller settles with ``summary``."""
        answer = complete(self.config, max_tokens=self.max_tokens, system=SYSTEM_PROMPT,
                          prompt=repairs.repair_prompt(summary, items),
                          operation="repair_summary")
        answer.add_to(usage)
        if answer.stop_reason == "max_tokens" or not answer.text:
            return None
        return self._capped(answer.text)

    def _capped(self, text: str) -> str:
        """``text`` within the summary's cap (recap.core.prompts.summarize.cap_summary)."""
        return cap_summary(text, max_tokens=self.max_tokens, count=self.config.count,
                           split=self.config.split)

    def _fold(self, text: str, turns: list[Turn], room: int, usage: Usage,
              mined: dict[str, Fact] | None, known: tuple[tuple[int, str], ...] = (), *,
              reported: bool = False) -> str:
        """``turns`` folded into ``text`` chunk by chunk; ``reported``: each chunk
        folded is a step of recap.progress (the top level only, not a split chunk)."""
        count = self.config.count
        chunks = chunk_turns(turns, max_tokens=room, count=count, split=self.config.split)
        for done, chunk in enumerate(chunks, start=1):
            try:
                text = self._update(text, chunk, usage, mined, known)
            except (PromptTooLong, CutOff) as exc:
                # Our estimate was low for this text, or its facts did not fit the
                # answer: halve the chunk and go on.
                half = min(room, sum(count(t.content) + 12 for t in chunk)) // 2
                if isinstance(exc, CutOff) and half < MIN_SPLIT_TOKENS:
                    with self._resend(usage):
                        text = self._fallback(text, chunk, usage, mined, known)
                elif half < MIN_CHUNK_TOKENS and isinstance(exc, PromptTooLong):
                    raise
                else:
                    # A refused prompt was not read; a cut-off answer was: its
                    # halves send the chunk again.
                    with self._resend(usage, isinstance(exc, CutOff)):
                        text = self._fold(text, chunk, half, usage, mined, known)
            if reported:
                progress.report("chunks folded", done=done, total=len(chunks))
        return text

    def _update(self, previous: str, chunk: Sequence[Turn], usage: Usage,
                mined: dict[str, Fact] | None, known: tuple[tuple[int, str], ...]) -> str:
        """``chunk`` folded into ``previous``: the configured way first; an answer that
        is empty, unusable (a plain one cut off too) or frozen (recap.core.prompts.frozen) is
        asked again the next way (WAYS); the last way's unusable answer raises. Each
        counts in ``usage.frozen``, with a note in ``usage.notes``; each way after the
        first is a resend (:meth:`_resend`), and ResendsSpent ends the asking."""
        ways = WAYS[1:] if self.plain or mined is None else WAYS
        batch = [t.content for t in chunk]
        for i, way in enumerate(ways):
            last = i == len(ways) - 1
            found: dict[str, Fact] | None = None if mined is None else {}
            with self._resend(usage, i > 0):
                try:
                    text = self._way(way, previous, chunk, usage, found, known)
                except CutOff as exc:
                    if not exc.summary:  # the summary ran away too: the chunk is split
                        raise
                    # Only the facts were cut: the summary stands, the facts are asked
                    # alone (below), not the summary again.
                    text, found = exc.summary, None
                    usage.notes.append("facts cut off: the summary kept, the facts asked alone")
                except UnusableSummary as exc:
                    if last or isinstance(exc, ResendsSpent):  # a spent bound ends the asking
                        raise
                    usage.frozen += 1
                    usage.notes.append(f"unusable {way} answer, asked again as "
                                       f"{ways[i + 1]}: {exc}")
                    continue
                # The last way's new part is the model's account of the new messages
                # alone: it never saw a summary to echo.
                why = None if last else frozen_reason(previous, guard.strip_details(text), batch)
                if why is None:
                    if mined is not None:
                        self._mine(way, chunk, usage, mined, found, known)
                    return text
            usage.frozen += 1
            usage.notes.append(f"frozen {way} answer, asked again as {ways[i + 1]}: {why}")
        raise AssertionError("unreachable: the last way returns or raises")

    @contextlib.contextmanager
    def _resend(self, usage: Usage, resend: bool = True) -> Iterator[None]:
        """The calls inside send the batch again (``resend``): counted in
        ``usage.resends`` once, their input in ``usage.resend_input_tokens``;
        ResendsSpent, before any call, once ``max_resends`` are spent."""
        if not resend:
            yield
            return
        if usage.resends >= self.max_resends:
            raise ResendsSpent(f"{usage.resends} resends spent (RECAP_MAX_RESENDS="
                               f"{self.max_resends}); not asked again")
        usage.resends += 1
        usage.resending += 1
        try:
            yield
        finally:
            usage.resending -= 1

    def _mine(self, way: str, chunk: Sequence[Turn], usage: Usage, mined: dict[str, Fact],
              found: dict[str, Fact] | None, known: tuple[tuple[int, str], ...]) -> None:
        """The facts of ``chunk``'s accepted answer into ``mined``: the tool way's own
        (``found``); the other ways, and a tool answer whose facts were cut off
        (``found`` None), ask for them in a call of their own."""
        if way == "tool" and found is not None:
            for fact in found.values():
                mined.setdefault(fact.fact, fact)
        else:
            self._facts_again(chunk, usage, mined, known, resend=found is None)

    def _facts_again(self, chunk: Sequence[Turn], usage: Usage, mined: dict[str, Fact],
                     known: tuple[tuple[int, str], ...], *, resend: bool) -> None:
        """:meth:`_facts`; ``resend``: they were asked already and cut off, so this
        call is a resend, and with none left they are dropped (the guard keeps their
        specifics)."""
        try:
            with self._resend(usage, resend):
                self._facts(chunk, usage, mined, known)
        except ResendsSpent as exc:
            usage.notes.append(f"facts dropped: {exc}")

    def _room(self, chunk: Sequence[Turn]) -> int:
        """The answer room for ``chunk``'s facts (recap.llm.structured.fact_room)."""
        return fact_room(sum(self.config.count(t.content) for t in chunk),
                         cap=self.max_facts_tokens)

    def _way(self, way: str, previous: str, chunk: Sequence[Turn], usage: Usage,
             mined: dict[str, Fact] | None, known: tuple[tuple[int, str], ...]) -> str:
        if way == "tool":
            return self._call(previous, chunk, usage, mined, known)
        if way == "plain":
            return self._call(previous, chunk, usage, None)
        # "fresh": the new messages' own summary, after the previous one (cut to make
        # room): a model that echoes the summary it is given cannot echo this one.
        own = self._call("", chunk, usage, None)
        room = self.max_tokens - self.config.count(own) - 2
        head = cap_summary(previous, max_tokens=room, count=self.config.count,
                           split=self.config.split) if previous and room > 0 else ""
        return self._capped(f"{head}\n\n{own}".strip())

    def _facts(self, chunk: Sequence[Turn], usage: Usage, mined: dict[str, Fact],
               known: tuple[tuple[int, str], ...], *, room: int | None = None) -> bool:
        """``chunk``'s facts alone (record_facts) in ``room`` answer tokens (default
        :meth:`_room`); cut off: dropped (the guard keeps their specifics), noted,
        and False."""
        prompt = facts_prompt(chunk) + known_block(known)
        cap = self._room(chunk) if room is None else room
        key = _request_key(FACTS_SYSTEM, prompt, cap, "record_facts")
        if key in usage.capped:  # the same request, the same cap: the same runaway
            usage.notes.append("facts answer cut off before: not asked again the same way")
            return False
        answer = complete(self.config, system=FACTS_SYSTEM, prompt=prompt, max_tokens=cap,
                          operation="extract_memory", tool=facts_tool())
        answer.add_to(usage)
        if answer.stop_reason == "max_tokens":
            usage.capped.add(key)
            usage.notes.append("facts answer cut off: dropped")
            return False
        for fact in parse_facts(answer.tool_input, known={i for i, _ in known}):
            mined.setdefault(fact.fact, fact)
        return True

    def _whole_summary(self, data: object) -> str | None:
        """The summary of a cut-off record_summary answer whose JSON still parsed (the
        facts ran away after it), within its cap; None when there is none. Only a
        summary the answer went past (its facts follow it) is known to be whole: a
        server may hand back a cut tool input parsed as far as it went."""
        if not (isinstance(data, dict) and list(data)[:2] == ["summary", "facts"]):
            return None
        try:
            text, _ = parse_answer(data)  # the facts of a runaway answer are not taken
        except UnusableSummary:
            return None
        return self._capped(text) if text else None

    def _fallback(self, previous: str, chunk: Sequence[Turn], usage: Usage,
                  mined: dict[str, Fact] | None, known: tuple[tuple[int, str], ...]) -> str:
        """A runaway summary-and-facts answer on a chunk too small to split: the summary
        alone, asked the remaining ways (plain, then fresh) like any other answer, so a
        frozen, empty or cut-off plain summary is asked again as the new messages'
        own; then the facts with a smaller room; facts cut off again are dropped.
        Noted in ``usage.notes``."""
        text = self._update(previous, chunk, usage, None, known)
        if mined is None:
            usage.notes.append("answer cut off: summary-only fallback")
            return text
        # The summary is settled: the facts are asked alone (not the summary again,
        # nor the previous summary), in less room than the answer that ran away.
        if self._facts(chunk, usage, mined, known,
                       room=max(1, self._room(chunk) // FALLBACK_FACT_SHARE)):
            usage.notes.append("answer cut off: summary-only fallback, facts with a smaller cap")
        else:
            usage.notes.append("answer cut off: summary-only fallback, runaway facts dropped")
        return text

    def _call(self, previous: str, chunk: Sequence[Turn], usage: Usage,
              mined: dict[str, Fact] | None, known: tuple[tuple[int, str], ...] = ()) -> str:
        prompt = render(self.template, previous_summary=previous or None, turns=chunk)
        count = self.config.count
        cap = self.max_tokens
        estimate = (count(SYSTEM_PROMPT) + count(self.template) + count(previous)
                    + estimate_turns(chunk, count))
        if mined is not None:
            instruction = FACTS_INSTRUCTION + known_block(known)
            prompt += instruction
            estimate += count(instruction)
            cap += self._room(chunk)
        cut = CutOff if mined is not None else UnusableSummary
        key = _request_key(SYSTEM_PROMPT, prompt, cap, "" if mined is None else TOOL_NAME)
        if key in usage.capped:
            # This request ran to its cap before: twice the room now (the summary is
            # still cut to its own cap), never the same request again.
            cap *= 2
            key = _request_key(SYSTEM_PROMPT, prompt, cap, "" if mined is None else TOOL_NAME)
            if key in usage.capped:
                raise cut(f"summary cut off at max_tokens={cap} before; not asked again "
                          "the same way")
        answer = complete(self.config, max_tokens=cap, system=SYSTEM_PROMPT, prompt=prompt,
                          operation="summarize", estimate=estimate,
                          tool=None if mined is None else summary_tool(self.max_tokens))
        answer.add_to(usage)
        if answer.stop_reason == "max_tokens":
            usage.capped.add(key)
            why = (f"summary cut off at max_tokens={cap}; not applied "
                   f"(answer {answer_digest(answer.text, answer.tool_input)})")
            if mined is None:
                raise UnusableSummary(why)
            raise CutOff(why, summary=self._whole_summary(answer.tool_input))
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


def _request_key(system: str, prompt: str, cap: int, tool: str) -> str:
    """A digest of one request as the model reads it, with its cap."""
    return hashlib.sha256("\x00".join((system, prompt, str(cap), tool)).encode(
        "utf-8", "surrogatepass")).hexdigest()


def token_ratio(summarizer: Summarizer, previous: str | None, turns: Sequence[Turn]) -> float:
    """The model's tokens per Recap's for ``summarizer``'s requests (1 but for Claude's
    summarizer with calibration on: :meth:`ClaudeSummarizer.token_ratio`)."""
    if not isinstance(summarizer, ClaudeSummarizer):
        return 1.0
    return summarizer.token_ratio(previous, turns)


def sent_texts(summarizer: Summarizer) -> tuple[str, ...]:
    """What ``summarizer`` itself sends besides the conversation (system prompt,
    template, instructions, the tool schema's descriptions, the repair prompt): a
    model that echoes any of it is not telling Recap a specific (recap.core.prompts.echo)."""
    if not isinstance(summarizer, ClaudeSummarizer):
        return ()
    return _sent_texts(summarizer.template, summarizer.max_tokens)


@functools.lru_cache(maxsize=16)
def _sent_texts(template: str, max_tokens: int) -> tuple[str, ...]:
    # The same few texts on every job of a process: walking the tool schema each
    # time, and flattening the result again (recap.core.prompts.echo), cost CPU for nothing.
    return (SYSTEM_PROMPT, template, FACTS_INSTRUCTION, KNOWN_INSTRUCTION,
            repairs.REPAIR_PROMPT, FACTS_SYSTEM, FACTS_PROMPT,
            *tool_texts(summary_tool(max_tokens)), *tool_texts(facts_tool()))
