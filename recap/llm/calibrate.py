"""How many of the model's tokens one of Recap's is, learnt once per server and model.

Recap counts with tiktoken (recap.llm.tokens); the model behind the server may
count the same text as more tokens (a local model's tokenizer does, often by a
third). Where the server answers the Messages API's ``count_tokens``, the first
request a process sizes for a (base URL, model) is counted there too, and the
ratio of the two counts, with a margin, sizes every later request: one that Recap
keeps within RECAP_LLM_MAX_INPUT_TOKENS by its own count is then within it by the
model's. A server without ``count_tokens`` leaves the ratio at 1, said once in the
log. RECAP_LLM_CALIBRATE_TOKENS=false never asks.
"""

from __future__ import annotations

import logging
import threading

from recap.errors import TransientLLMError
from recap.llm.client import ClientConfig, classify, time_limit_behind

log = logging.getLogger("recap.llm")

# A ratio learnt on one request is a few percent off on another text.
MARGIN = 0.1
# A count_tokens call is cheap; one that takes longer than this is a server to
# size requests for without it, this time.
COUNT_TIMEOUT_S = 30.0

_RATIOS: dict[tuple[str, str], float] = {}
_LOCK = threading.Lock()


def ratio_of(model_tokens: int, recap_tokens: int, *, margin: float = MARGIN) -> float:
    """The factor Recap's counts are multiplied by to size requests: the model's count
    over Recap's, with ``margin``, and never below 1 (a model that counts fewer
    tokens leaves the configured limit as it is)."""
    if model_tokens <= 0 or recap_tokens <= 0:
        return 1.0
    return max(1.0, model_tokens / recap_tokens * (1 + margin))


def known_ratio(config: ClientConfig) -> float | None:
    """The ratio learnt for ``config``'s server and model in this process, if any."""
    with _LOCK:
        return _RATIOS.get(_key(config))


def token_ratio(config: ClientConfig, *, system: str, prompt: str) -> float:
    """The ratio (:func:`ratio_of`) for ``config``'s server and model, learnt from the
    request (``system``, one user turn ``prompt``) if not known yet. Never raises for
    the server's sake: a server that cannot count leaves 1 (kept, and logged once; a
    transient failure is not kept, so the next job asks again)."""
    if not config.calibrate:
        return 1.0
    known = known_ratio(config)
    if known is not None:
        return known
    model_tokens = _count(config, system=system, prompt=prompt)
    if model_tokens is None:
        return 1.0
    recap_tokens = config.count(system) + config.count(prompt)
    ratio = ratio_of(model_tokens, recap_tokens)
    log.info("%s at %s counts %d tokens where Recap counts %d: requests are sized by %.3f "
             "times Recap's count (with a %d%% margin)", config.model, _key(config)[0],
             model_tokens, recap_tokens, ratio, round(MARGIN * 100))
    return _keep(config, ratio)


def _count(config: ClientConfig, *, system: str, prompt: str) -> int | None:
    """The server's count of the request; None when it gives none."""
    try:
        counted = config.client.messages.count_tokens(
            model=config.model, system=system, messages=[{"role": "user", "content": prompt}],
            timeout=min(config.timeout_s, COUNT_TIMEOUT_S))
    except Exception as exc:
        limit = time_limit_behind(exc)
        if limit is not None:
            raise limit from None  # the job's soft time limit: never swallowed
        mapped = classify(exc)
        if isinstance(mapped, TransientLLMError):
            log.info("count_tokens at %s failed (%s): this job's requests are sized by "
                     "Recap's own count", _key(config)[0], mapped)
            return None
        _not_offered(config, f"{type(exc).__name__}: {mapped or exc}")
        return None
    tokens = getattr(counted, "input_tokens", None)
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0:
        _not_offered(config, f"its answer has no input_tokens count ({tokens!r})")
        return None
    return tokens


def _not_offered(config: ClientConfig, why: str) -> None:
    _keep(config, 1.0)
    log.warning("the server at %s does not count tokens for %s (%s): requests are sized by "
                "Recap's own count (tiktoken), so keep RECAP_LLM_MAX_INPUT_TOKENS below the "
                "model's window with room for its tokenizer", _key(config)[0], config.model,
                why)


def _keep(config: ClientConfig, ratio: float) -> float:
    with _LOCK:
        return _RATIOS.setdefault(_key(config), ratio)


def _key(config: ClientConfig) -> tuple[str, str]:
    return str(getattr(config.client, "base_url", "")), config.model


def forget() -> None:
    """Forget every ratio learnt (a new process, or a test with another server)."""
    with _LOCK:
        _RATIOS.clear()
