"""Summarizers: Claude (the real one) and an offline extractive stand-in.

The only network I/O of a job happens here. ``classify`` maps SDK exceptions to
Recap's error tree by HTTP status, since the SDK's class hierarchy (for example
where ``OverloadedError`` sits) differs between versions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from worker.errors import (
    LLMError,
    PermanentLLMError,
    PromptTooLong,
    TransientLLMError,
    UnusableSummary,
)
from worker.prompt import SYSTEM_PROMPT, Turn, chunk_turns, render

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


class Summarizer(Protocol):
    model: str

    def summarize(self, previous: str | None, turns: Sequence[Turn]) -> SummaryResult: ...


def _retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                continue  # an HTTP date: fall back to our own backoff
    return None


_SPEND_LIMIT = re.compile(r"credit balance|spend(ing)? limit|billing|quota exceeded", re.I)
_TOO_LONG = re.compile(r"prompt is too long|too many (input )?tokens|context (length|window)",
                       re.I)


def classify(exc: BaseException) -> LLMError | None:
    """Map an SDK exception to Transient/Permanent LLMError; None if not an API error."""
    import anthropic

    if isinstance(exc, LLMError):
        return exc
    name = type(exc).__name__
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        message = f"{name} {status}: {_short(exc)}"
        if status == 400 and _TOO_LONG.search(str(exc)):
            return PromptTooLong(message, status=status)
        if status == 429 and _SPEND_LIMIT.search(str(exc)):
            # A spend limit does not lift in seconds: an operator must act.
            return PermanentLLMError(message, status=status)
        if status in (408, 409, 429) or status >= 500:
            # Timeouts, lock conflicts, rate limits, server errors and 529
            # overloaded pass with time; the server may say how long.
            return TransientLLMError(message, status=status,
                                     retry_after=_retry_after(exc.response.headers))
        # 400, 401, 403, 404, 413 and the rest: the same request fails again.
        return PermanentLLMError(message, status=status)
    if isinstance(exc, anthropic.APIConnectionError):  # includes timeouts
        return TransientLLMError(f"{name}: {_short(exc)}")
    if isinstance(exc, anthropic.APIResponseValidationError | json.JSONDecodeError):
        # A malformed body (bad JSON) from a proxy or a bad moment: try again.
        return TransientLLMError(f"{name}: malformed response: {_short(exc)}")
    return None


def _short(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass(frozen=True)
class Answer:
    text: str
    stop_reason: str | None
    input_tokens: int
    output_tokens: int

    def add_usage(self, result: SummaryResult) -> None:
        result.calls += 1
        result.input_tokens += self.input_tokens
        result.output_tokens += self.output_tokens


def complete(client: Any, *, model: str, max_tokens: int, system: str, prompt: str,
             timeout_s: float, operation: str) -> Answer:
    """One non-streaming Messages API call; SDK errors come out classified.

    No temperature: API version 2026-10-21 (sent by SDK 2.x) rejects every
    sampling parameter with a 400, even at its default value.
    """
    from worker import tracing

    with tracing.llm_span(operation, model) as span:
        try:
            response = client.messages.create(
                model=model, max_tokens=max_tokens, system=system,
                messages=[{"role": "user", "content": prompt}], timeout=timeout_s)
        except Exception as exc:
            mapped = classify(exc)
            if mapped is None:
                raise
            secret = getattr(client, "api_key", None)
            if secret and secret in f"{exc}{mapped}":
                # A server (or proxy) that echoes the key in its error body must not
                # push it into Celery's failure log, Flower events or audit rows.
                mapped.args = tuple(str(a).replace(secret, "[redacted]") for a in mapped.args)
                raise mapped from None
            raise mapped from exc
        usage = getattr(response, "usage", None)
        answer = Answer(
            text="".join(getattr(b, "text", "") for b in response.content or []
                         if getattr(b, "type", None) == "text").strip(),
            stop_reason=response.stop_reason,
            input_tokens=getattr(usage, "input_tokens", 0) or 0,
            output_tokens=getattr(usage, "output_tokens", 0) or 0)
        span.record_usage(answer.input_tokens, answer.output_tokens)
    return answer


@dataclass
class ClaudeSummarizer:
    """Folds turns into the running summary with the Messages API, chunk by chunk."""

    client: Any
    model: str
    max_tokens: int
    template: str
    max_input_tokens: int
    count: Callable[[str], int]
    split: Callable[[str, int], list[str]]
    timeout_s: float = 30.0

    def summarize(self, previous: str | None, turns: Sequence[Turn]) -> SummaryResult:
        result = SummaryResult(text=previous or "", model=self.model)
        # Room for the turns: the input limit minus the prompt, the summary so far
        # (which can grow to max_tokens) and the answer.
        fixed = self.count(self.template) + self.count(SYSTEM_PROMPT) + 2 * self.max_tokens
        room = max(MIN_CHUNK_TOKENS, self.max_input_tokens - fixed - self.count(previous or ""))
        try:
            self._fold(result, list(turns), room)
        except LLMError as exc:
            exc.partial = result  # tokens already spent, for the failed run's audit row
            raise
        return result

    def _fold(self, result: SummaryResult, turns: list[Turn], room: int) -> None:
        for chunk in chunk_turns(turns, max_tokens=room, count=self.count, split=self.split):
            try:
                self._call(result, chunk)
            except PromptTooLong:
                # Our estimate was low for this text: halve the chunk and go on.
                if room // 2 < MIN_CHUNK_TOKENS:
                    raise
                self._fold(result, chunk, room // 2)

    def _call(self, result: SummaryResult, chunk: Sequence[Turn]) -> None:
        prompt = render(self.template, previous_summary=result.text or None, turns=chunk)
        answer = complete(self.client, model=self.model, max_tokens=self.max_tokens,
                          system=SYSTEM_PROMPT, prompt=prompt, timeout_s=self.timeout_s,
                          operation="summarize")
        answer.add_usage(result)
        if answer.stop_reason == "max_tokens":
            raise UnusableSummary(f"summary cut off at max_tokens={self.max_tokens}; "
                                  "not applied")
        if not answer.text:
            raise UnusableSummary("the model returned an empty summary; not applied")
        result.text = answer.text


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass
class OfflineSummarizer:
    """An extractive stand-in that needs no network. Not Claude: labelled as such.

    It keeps the first sentence of each message (clipped) after the previous
    summary, and drops the oldest lines once over ``max_words``.
    """

    model: str = OFFLINE_MODEL
    max_words: int = 400

    def summarize(self, previous: str | None, turns: Sequence[Turn]) -> SummaryResult:
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
        return SummaryResult(text=text, model=self.model, calls=1)
