"""One cheap call that proves the model name and the API key work, and says which is
wrong: ``recap check`` runs it, and the worker at start (a warning, logged once).

The call is the smallest one a job makes (one output token), through the same
client, deadline and error judgement: a key the API refuses is a 401 (403 when
it may not use the API), a model name it does not know a 404 (the key was
accepted: the API authenticates first). Anything transient says only that the
check could not be made. Every verdict names the server it talked to, and a
server other than api.anthropic.com (ANTHROPIC_BASE_URL: a proxy, a gateway, the
stand-in) proves only that it answered, not that an Anthropic key works.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from recap.errors import PermanentLLMError, TransientLLMError
from recap.llm.client import ClientConfig, complete, got_no_answer

Problem = Literal["key", "model", "request", "unreachable"]
ANTHROPIC_HOST = "api.anthropic.com"


@dataclass(frozen=True)
class ProbeResult:
    """What the check found: ``problem`` None when the model and key work."""

    problem: Problem | None
    message: str

    @property
    def ok(self) -> bool:
        return self.problem is None


def server(client: Any) -> str:
    """The base URL ``client`` sends to, without any user or password in it."""
    url = urlsplit(str(getattr(client, "base_url", f"https://{ANTHROPIC_HOST}")))
    host = url.hostname or ""
    where = f"[{host}]" if ":" in host else host
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{where}{port}{url.path}".rstrip("/")


def probe(config: ClientConfig) -> ProbeResult:
    """Make one Messages API call of one output token with ``config``; never raises
    an LLMError (its verdict is the result)."""
    model = config.model
    at = server(config.client)
    anthropic = urlsplit(at).hostname == ANTHROPIC_HOST
    try:
        answer = complete(config, max_tokens=1, system="Answer with one word.",
                          prompt="Say OK.", operation="check_model")
    except PermanentLLMError as exc:
        if exc.status == 401:
            return ProbeResult("key", f"the API key was refused by {at} ({exc}): set "
                                      "ANTHROPIC_API_KEY to a valid key")
        if exc.status == 403:
            return ProbeResult("key", f"the API key may not use the API at {at} ({exc}): "
                                      "check the key's workspace and permissions")
        if exc.status == 404:
            return ProbeResult("model", f"model {model!r} was not found at {at} ({exc}); the "
                                        "key was accepted: set RECAP_MODEL to a model this "
                                        "key can use (or check ANTHROPIC_BASE_URL)")
        return ProbeResult("request", f"the API at {at} refused the check ({exc})")
    except TransientLLMError as exc:
        if got_no_answer(exc):
            return ProbeResult("unreachable", f"could not reach {at}: {exc}; the model and "
                                              "key are unproven: check the network (and "
                                              "ANTHROPIC_BASE_URL), then try again")
        return ProbeResult("unreachable", f"could not make the check at {at}: {exc}; the "
                                          "model and key are unproven, try again")
    spent = f"one call, {answer.input_tokens} input and {answer.output_tokens} output tokens"
    if anthropic:
        return ProbeResult(None, f"model {model!r} and the API key work at {at} ({spent})")
    return ProbeResult(None, f"the Messages API at {at} answered for model {model!r} "
                             f"({spent}); ANTHROPIC_BASE_URL points away from "
                             f"{ANTHROPIC_HOST}, so this proves nothing about an Anthropic "
                             "key or model")
