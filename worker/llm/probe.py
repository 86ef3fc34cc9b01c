"""One cheap call that proves the model name and the API key work, and says which is
wrong: ``recap check`` runs it, and the worker at start (a warning, logged once).

The call is the smallest one a job makes (one output token), through the same
client, deadline and error judgement: a key the API refuses is a 401 (403 when
it may not use the API), a model name it does not know a 404 (the key was
accepted: the API authenticates first). Anything transient says only that the
check could not be made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from recap.errors import PermanentLLMError, TransientLLMError
from recap.llm.client import ClientConfig, complete

Problem = Literal["key", "model", "request", "unreachable"]


@dataclass(frozen=True)
class ProbeResult:
    """What the check found: ``problem`` None when the model and key work."""

    problem: Problem | None
    message: str

    @property
    def ok(self) -> bool:
        return self.problem is None


def probe(config: ClientConfig) -> ProbeResult:
    """Make one Messages API call of one output token with ``config``; never raises
    an LLMError (its verdict is the result)."""
    model = config.model
    try:
        answer = complete(config, max_tokens=1, system="Answer with one word.",
                          prompt="Say OK.", operation="check_model")
    except PermanentLLMError as exc:
        if exc.status == 401:
            return ProbeResult("key", f"the API key was refused ({exc}): set "
                                      "ANTHROPIC_API_KEY to a valid key")
        if exc.status == 403:
            return ProbeResult("key", f"the API key may not use this API ({exc}): check "
                                      "the key's workspace and permissions")
        if exc.status == 404:
            return ProbeResult("model", f"model {model!r} was not found ({exc}); the key "
                                        "was accepted: set RECAP_MODEL to a model this key "
                                        "can use (or check ANTHROPIC_BASE_URL)")
        return ProbeResult("request", f"the API refused the check ({exc})")
    except TransientLLMError as exc:
        return ProbeResult("unreachable", f"could not make the check: {exc}; the model "
                                          "and key are unproven, try again")
    return ProbeResult(None, f"model {model!r} and the API key work (one call, "
                             f"{answer.input_tokens} input and {answer.output_tokens} "
                             "output tokens)")
