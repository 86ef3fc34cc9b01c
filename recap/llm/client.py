"""The one Claude call every Recap job makes, and how its failures are judged.

``ClientConfig`` holds what every caller of the Messages API shares (client,
model, timeout, input limit, tokenizer). ``complete`` makes one non-streaming
call within a total deadline (recap.llm.deadline); ``classify`` maps SDK
exceptions to Recap's error tree by HTTP status (the SDK's class hierarchy,
e.g. where ``OverloadedError`` sits, differs between versions) and honours the
server's ``x-should-retry`` and ``retry-after``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any

from recap import tracing
from recap.core.text import redact, sanitize
from recap.errors import LLMError, PermanentLLMError, PromptTooLong, TransientLLMError
from recap.llm.deadline import call_within


@dataclass(frozen=True)
class ClientConfig:
    """What the summarizer, the extractor and the title call share: one SDK client."""

    client: Any
    model: str
    timeout_s: float
    max_input_tokens: int
    count: Callable[[str], int]
    split: Callable[[str, int], list[str]]
    # Learn the model's own count of Recap's requests (recap.llm.calibrate).
    calibrate: bool = False
    # The tenant whose requests these are (recap.core.tenant.tenant_of): what
    # calibration learns from one tenant's text sizes only that tenant's requests.
    tenant: str | None = None

    def with_model(self, model: str) -> ClientConfig:
        return self if model == self.model else dataclasses.replace(self, model=model)

    def for_tenant(self, tenant: str | None) -> ClientConfig:
        return self if tenant == self.tenant else dataclasses.replace(self, tenant=tenant)


@dataclass
class Usage:
    """What the calls of one job spent, also when a later call failed."""

    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    # Recap's own (tiktoken) estimate of the input the API counted as input_tokens.
    estimated_input_tokens: int = 0
    # What the calls did besides the plain path (a fallback taken), for the run's reason.
    notes: list[str] = field(default_factory=list)
    # Answers refused as frozen or empty and asked again (recap.core.prompts.frozen).
    frozen: int = 0
    # Times the batch was sent again after an unusable answer (another way, halves,
    # facts alone), and the input tokens those calls spent.
    resends: int = 0
    resend_input_tokens: int = 0
    # Inside a resend: the calls' input counts in resend_input_tokens too.
    resending: int = 0
    # Calls whose answer ran to its cap (a digest of request and cap): never made again.
    capped: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Answer:
    text: str
    stop_reason: str | None
    input_tokens: int
    output_tokens: int
    # The input of the first tool_use block (a call made with ``tool``), unsanitized.
    tool_input: Any = None
    estimated_input_tokens: int = 0

    def add_to(self, usage: Usage) -> None:
        usage.calls += 1
        usage.input_tokens += self.input_tokens
        usage.output_tokens += self.output_tokens
        usage.estimated_input_tokens += self.estimated_input_tokens
        if usage.resending:
            usage.resend_input_tokens += self.input_tokens


# What a prompt adds around each message (its <message role="..."> tags), counted once.
MESSAGE_WRAPPER = '<message role="assistant">\n\n</message>\n'


def estimate_turns(turns: Sequence[Any], count: Callable[[str], int]) -> int:
    """Recap's estimate of ``turns`` inside a prompt: each message's count (counted
    before, so remembered) plus its wrapper, the arithmetic of Recap's budgets."""
    return sum(count(t.content) for t in turns) + len(turns) * count(MESSAGE_WRAPPER)


def retry_after(headers: Any, *, now: float | None = None) -> float | None:
    """Seconds the server asks us to wait (``retry-after-ms``, or ``retry-after`` in
    seconds or as an HTTP date); None when it says nothing usable."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        seconds = _seconds(value)
        if seconds is not None:
            return seconds / 1000
    value = headers.get("retry-after")
    if not value:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": an HTTP date is always GMT, never local time
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _seconds(value: str) -> float | None:
    """A non-negative finite number of seconds, or None ("inf", "nan", a date...)."""
    try:
        seconds = float(value)
    except ValueError:
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


_SPEND_LIMIT = re.compile(r"credit balance|spend(ing)? limit|billing|quota exceeded", re.I)
_TOO_LONG = re.compile(r"prompt is too long|too many (input )?tokens|context (length|window)",
                       re.I)


def classify(exc: BaseException) -> LLMError | None:
    """Map an SDK exception to Transient/Permanent LLMError (an LLMError is returned
    as is); None if it is not an API error."""
    import anthropic

    if isinstance(exc, LLMError):
        return exc
    name = type(exc).__name__
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        message = f"{name} {status}: {_short(exc)}"
        headers = exc.response.headers
        should = (headers.get("x-should-retry") or "").lower()
        if status == 400 and _TOO_LONG.search(str(exc)):
            return PromptTooLong(message, status=status)
        if should == "false":
            # The server knows best, as the SDK's own _should_retry says.
            return PermanentLLMError(message, status=status)
        if status == 429 and _SPEND_LIMIT.search(str(exc)):
            # A spend limit does not lift in seconds: an operator must act.
            return PermanentLLMError(message, status=status)
        if should == "true" or status in (408, 409, 429) or status >= 500:
            # Timeouts, lock conflicts, rate limits, server errors and 529
            # overloaded pass with time; the server may say how long.
            return TransientLLMError(message, status=status, retry_after=retry_after(headers))
        # 400, 401, 403, 404, 413 and the rest: the same request fails again.
        return PermanentLLMError(message, status=status)
    if isinstance(exc, anthropic.APIConnectionError):  # includes timeouts
        return TransientLLMError(f"{name}: {_short(exc)}")
    if isinstance(exc, anthropic.APIResponseValidationError):
        # A malformed body (bad JSON) from a proxy or a bad moment: try again.
        return TransientLLMError(f"{name}: malformed response: {_short(exc)}")
    return None


def got_no_answer(exc: LLMError) -> bool:
    """Whether ``exc`` (raised by :func:`complete`) means no server answered at all:
    refused, unresolvable, timed out; not an error status or a malformed body."""
    import anthropic

    return isinstance(exc.__context__, anthropic.APIConnectionError)


def time_limit_behind(exc: BaseException) -> BaseException | None:
    """The SoftTimeLimitExceeded behind ``exc`` (its cause or context chain), if any."""
    from celery.exceptions import SoftTimeLimitExceeded

    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return None
        if isinstance(seen, SoftTimeLimitExceeded):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _short(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


def complete(config: ClientConfig, *, max_tokens: int, system: str, prompt: str,
             operation: str, tool: dict[str, Any] | None = None,
             estimate: int | None = None) -> Answer:
    """One non-streaming Messages API call; SDK errors come out classified.

    ``tool`` (a tool definition with a JSON input schema): the call must answer by
    using it (``tool_choice``), and the answer's ``tool_input`` is what it passed.
    ``estimate``: Recap's token estimate of ``system`` + ``prompt``, carried into
    the answer next to the API's count; None counts them here (callers that
    already hold the counts of the parts pass their sum: a long prompt costs
    milliseconds to tokenize again). No temperature: API version 2026-10-21
    (sent by SDK 2.x) rejects every sampling parameter with a 400, even at its
    default value.
    """
    if estimate is None:
        estimate = config.count(system) + config.count(prompt)
    with tracing.llm_span(operation, config.model) as span:
        try:
            extra: dict[str, Any] = {} if tool is None else {
                "tools": [tool], "tool_choice": {"type": "tool", "name": tool["name"]}}
            # timeout= bounds each socket read; call_within bounds the whole call.
            response = call_within(lambda: config.client.messages.create(
                model=config.model, max_tokens=max_tokens, system=system,
                messages=[{"role": "user", "content": prompt}], timeout=config.timeout_s,
                **extra), config.timeout_s, what=f"the {operation} call")
        except LLMError:
            raise  # the deadline's own verdict, already classified
        except Exception as exc:
            limit = time_limit_behind(exc)
            if limit is not None:
                # Celery's soft time limit fired inside the HTTP client, which the SDK
                # wraps as a connection error: report it as what it is.
                raise limit from None
            mapped = classify(exc)
            if mapped is None and isinstance(exc, json.JSONDecodeError):
                # The SDK parsing a malformed body (a proxy, a bad moment). Only here:
                # a JSONDecodeError from Recap's own code is not an API failure.
                mapped = TransientLLMError(f"{type(exc).__name__}: malformed response: "
                                           f"{_short(exc)}")
            if mapped is None:
                raise
            secret = getattr(config.client, "api_key", None)
            if secret and secret in f"{exc}{mapped}":
                # A server (or proxy) that echoes the key in its error body must not
                # push it into Celery's failure log, Flower events or audit rows.
                mapped.args = tuple(redact(str(a), secret) for a in mapped.args)
                raise mapped from None
            raise mapped from exc
        usage = getattr(response, "usage", None)
        answer = Answer(
            text=sanitize("".join(getattr(b, "text", "") for b in response.content or []
                                  if getattr(b, "type", None) == "text")).strip(),
            stop_reason=response.stop_reason,
            input_tokens=getattr(usage, "input_tokens", 0) or 0,
            output_tokens=getattr(usage, "output_tokens", 0) or 0,
            tool_input=next((getattr(b, "input", None) for b in response.content or []
                             if getattr(b, "type", None) == "tool_use"), None),
            estimated_input_tokens=estimate)
        span.record_usage(answer.input_tokens, answer.output_tokens)
    return answer


def answer_digest(text: str, tool_input: object) -> str:
    """A short digest of one answer, in the error of an unusable one: the same digest
    on the next attempt means the server answers this request deterministically,
    and retrying it again would only spend more."""
    raw = text + "\x00" + json.dumps(tool_input, sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:16]
