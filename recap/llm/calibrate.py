"""How many of the model's tokens one of Recap's is, learnt once per server, model
and tenant.

Recap counts with tiktoken (recap.llm.tokens); the model behind the server may
count the same text as more tokens (a local model's tokenizer does, often by a
third). Where the server answers the Messages API's ``count_tokens``, the first
request a process sizes for a (base URL, model, tenant) is counted there too, and
the ratio of the two counts, with a margin, sizes every later request of that
tenant: one that Recap keeps within RECAP_LLM_MAX_INPUT_TOKENS by its own count is
then within it by the model's. The ratio is learnt from one tenant's text and used
for that tenant's folds only, so what one tenant sends never changes how another
tenant's sessions are sized.

The count is one network call, made within the job's total deadline
(recap.llm.deadline). A count that is not a plausible answer for the text (not a
positive integer, more than MAX_COUNT, or further than MAX_FACTOR from Recap's
own count of the same text either way) is refused, said once in the log, and
Recap's own count sizes that tenant's requests; so does a server without
``count_tokens`` (said once), and, for RETRY_AFTER_S, a count that failed or did
not come in time.
RECAP_LLM_CALIBRATE_TOKENS=false never asks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict

from recap.errors import TransientLLMError
from recap.llm.client import ClientConfig, classify, time_limit_behind
from recap.llm.deadline import call_within

log = logging.getLogger("recap.llm")

# A ratio learnt on one request is a few percent off on another text.
MARGIN = 0.1
# A count_tokens call is cheap; one that takes longer than this (or than the LLM
# timeout, if shorter), in total, is a server to size this job's requests without.
COUNT_TIMEOUT_S = 30.0
# The most tokens a count may say a request holds: more than any model's window.
MAX_COUNT = 10_000_000
# How far the model's count of a text may be from Recap's own, either way: real
# tokenizers differ by tens of percent (a few times, on unusual scripts); an
# answer further off is a broken server or proxy, never a tokenizer.
MAX_FACTOR = 4.0
# The largest ratio requests are ever sized by.
MAX_RATIO = MAX_FACTOR * (1 + MARGIN)
# After a transient failure (or a count not in within its deadline), how long
# requests of that server, model and tenant are sized by Recap's own count before
# the server is asked again: a server that trickles every answer costs one job
# its deadline, not every job, nor twice the same job.
RETRY_AFTER_S = 60.0
# Ratios kept per process (server, model and tenant): the least recently used
# beyond this are forgotten, and asked again when needed.
MAX_KEPT = 4096

Key = tuple[str, str, str | None]

_RATIOS: OrderedDict[Key, float] = OrderedDict()
_SAID: set[tuple[str, str, str]] = set()  # (server, model, what) warned about
_FAILED: OrderedDict[Key, float] = OrderedDict()  # key -> monotonic time of a transient failure
_LOCK = threading.Lock()


def ratio_of(model_tokens: int, recap_tokens: int, *, margin: float = MARGIN) -> float:
    """The factor Recap's counts are multiplied by to size requests: the model's count
    over Recap's, with ``margin``, never below 1 (a model that counts fewer tokens
    leaves the configured limit as it is) and never above MAX_RATIO. A pair of
    counts :func:`implausible` refuses gives 1."""
    if implausible(model_tokens, recap_tokens) is not None:
        return 1.0
    return min(MAX_RATIO, max(1.0, model_tokens / recap_tokens * (1 + margin)))


def implausible(model_tokens: object, recap_tokens: int) -> str | None:
    """Why ``model_tokens`` (a server's count of a text Recap counts as
    ``recap_tokens``) cannot be a tokenizer's count of it; None when it can."""
    if not isinstance(model_tokens, int) or isinstance(model_tokens, bool):
        return f"its count is not an integer ({_shown(model_tokens)})"
    if model_tokens <= 0:
        return f"its count is not positive ({_shown(model_tokens)})"
    if model_tokens > MAX_COUNT:
        return f"its count is above {MAX_COUNT:,} tokens ({_shown(model_tokens)})"
    if recap_tokens <= 0:
        return "Recap counts no tokens in the text"
    if not recap_tokens / MAX_FACTOR <= model_tokens <= recap_tokens * MAX_FACTOR:
        return (f"its count ({model_tokens}) is more than {MAX_FACTOR:g} times off Recap's "
                f"own ({recap_tokens})")
    return None


def _shown(value: object) -> str:
    # An int of 10^400 digits is no log line; nor is a long string.
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def known_ratio(config: ClientConfig) -> float | None:
    """The ratio learnt for ``config``'s server, model and tenant in this process, if any."""
    with _LOCK:
        key = _key(config)
        ratio = _RATIOS.get(key)
        if ratio is not None:
            _RATIOS.move_to_end(key)
        return ratio


def token_ratio(config: ClientConfig, *, system: str, prompt: str) -> float:
    """The ratio (:func:`ratio_of`) for ``config``'s server, model and tenant, learnt
    from the request (``system``, one user turn ``prompt``) if not known yet. Never
    raises for the server's sake: a server that cannot count, or answers a count
    :func:`implausible` refuses, leaves 1 (kept, and logged once); a transient
    failure or a count not in within its deadline leaves 1 for RETRY_AFTER_S, and
    the server is asked again after. Celery's soft time limit is raised."""
    if not config.calibrate:
        return 1.0
    known = known_ratio(config)
    if known is not None:
        return known
    if _failed_lately(config):
        return 1.0
    model_tokens = _count(config, system=system, prompt=prompt)
    if model_tokens is None:
        return 1.0
    recap_tokens = config.count(system) + config.count(prompt)
    refused = implausible(model_tokens, recap_tokens)
    if refused is not None or not isinstance(model_tokens, int):
        return _not_offered(config, "refused", f"it answered a count Recap refuses: {refused}")
    ratio = ratio_of(model_tokens, recap_tokens)
    log.info("%s at %s counts %d tokens where Recap counts %d: requests are sized by %.3f "
             "times Recap's count (with a %d%% margin)", config.model, _key(config)[0],
             model_tokens, recap_tokens, ratio, round(MARGIN * 100))
    return _keep(config, ratio)


def _count(config: ClientConfig, *, system: str, prompt: str) -> object | None:
    """The server's answer (its ``input_tokens``, unchecked); None when it gives none."""
    seconds = min(config.timeout_s, COUNT_TIMEOUT_S)
    try:
        # timeout= bounds each socket read; call_within bounds the whole call.
        counted = call_within(lambda: config.client.messages.count_tokens(
            model=config.model, system=system, messages=[{"role": "user", "content": prompt}],
            timeout=seconds), seconds, what="the count_tokens call")
    except Exception as exc:
        limit = time_limit_behind(exc)
        if limit is not None:
            raise limit from None  # the job's soft time limit: never swallowed
        mapped = classify(exc)
        if isinstance(mapped, TransientLLMError):
            log.info("count_tokens at %s failed (%s): requests are sized by Recap's own "
                     "count for %g s", _key(config)[0], mapped, RETRY_AFTER_S)
            _failed_now(config)
            return None
        _not_offered(config, "absent", f"{type(exc).__name__}: {mapped or exc}")
        return None
    tokens = getattr(counted, "input_tokens", None)
    if tokens is None:
        _not_offered(config, "absent", "its answer has no input_tokens count")
    return tokens


def _not_offered(config: ClientConfig, what: str, why: str) -> float:
    """Keep 1 for ``config``'s key and say so once per server, model and ``what``."""
    server, model, _ = _key(config)
    with _LOCK:
        first = (server, model, what) not in _SAID
        _SAID.add((server, model, what))
    if first:
        log.warning("the server at %s does not count tokens usably for %s (%s): requests are "
                    "sized by Recap's own count (tiktoken), so keep RECAP_LLM_MAX_INPUT_TOKENS "
                    "below the model's window with room for its tokenizer", server, model, why)
    return _keep(config, 1.0)


def _keep(config: ClientConfig, ratio: float) -> float:
    key = _key(config)
    with _LOCK:
        kept = _RATIOS.setdefault(key, ratio)
        _RATIOS.move_to_end(key)
        while len(_RATIOS) > MAX_KEPT:
            _RATIOS.popitem(last=False)
        return kept


def _failed_lately(config: ClientConfig) -> bool:
    with _LOCK:
        at = _FAILED.get(_key(config))
    return at is not None and time.monotonic() - at < RETRY_AFTER_S


def _failed_now(config: ClientConfig) -> None:
    key = _key(config)
    with _LOCK:
        _FAILED[key] = time.monotonic()
        _FAILED.move_to_end(key)
        while len(_FAILED) > MAX_KEPT:
            _FAILED.popitem(last=False)


def _key(config: ClientConfig) -> Key:
    return str(getattr(config.client, "base_url", "")), config.model, config.tenant


def forget() -> None:
    """Forget every ratio learnt and every warning said (a new process, or a test
    with another server)."""
    with _LOCK:
        _RATIOS.clear()
        _SAID.clear()
        _FAILED.clear()
