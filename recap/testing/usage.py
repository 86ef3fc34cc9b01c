"""The ``usage`` the fake reports: input tokens split into cache reads, cache writes
and uncached input, counted as the API counts them with prompt caching."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any


def fake_tokens(chars: int) -> int:
    """The fake's token count of ``chars`` characters of request text: ceil(chars / 3.5),
    deterministic and independent of Recap's (tiktoken), so a test can compare Recap's
    estimate with "the API's" count."""
    return -(-2 * chars // 7)  # ceil(chars / 3.5) in integers


def _units(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The request as (text, carries a breakpoint) units in prefix order; the text
    of a unit is what the fake counts, its serialization what a prefix matches."""
    units = [(_serialized(t), "cache_control" in t) for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str) and system:
        units.append((system, False))
    elif isinstance(system, list):
        units += [(str(b.get("text", "")), "cache_control" in b) for b in system]
    for m in body["messages"]:
        content = m["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        units += [(m["role"] + ":" + (b["text"] if b.get("type") == "text"
                                      else _serialized(b)),
                   "cache_control" in b) for b in blocks]
    return units


def _serialized(block: dict[str, Any]) -> str:
    """A tool or non-text block as a prefix matches it: a breakpoint marks where a
    prefix ends and is not part of it, so a block cached with ``cache_control`` is
    read by a later request that sends it without (the breakpoint moved on)."""
    return json.dumps({k: v for k, v in block.items() if k != "cache_control"},
                      sort_keys=True)


def request_usage(body: dict[str, Any], cache: set[bytes] | None = None, *,
                  count: Callable[[str], int] | None = None) -> dict[str, int]:
    """The ``usage`` input fields of one request, counted as the API counts them:
    ``input_tokens`` after the last breakpoint, ``cache_read_input_tokens`` for the
    longest prefix an earlier request wrote (ended at one of its breakpoints),
    ``cache_creation_input_tokens`` from there to this request's last breakpoint.
    The three add up to the request's tokens. ``cache`` (the prefixes written so
    far) is updated; None counts everything as uncached. Tokens are the fake's
    characters / 3.5, or with ``count`` the sum of ``count`` over the request's
    blocks (recap/bench/harness/pricing.py counts with tiktoken)."""
    units = _units(body)
    chars, digests, last_bp = [0], [], -1
    h = hashlib.sha256()
    for i, (text, bp) in enumerate(units):
        h.update(text.encode("utf-8", "surrogatepass") + b"\x00")
        digests.append(h.digest())
        chars.append(chars[-1] + (len(text) if count is None else count(text)))
        last_bp = i if bp else last_bp
    if count is not None:  # chars holds token sums already
        return _split_usage(chars, digests, units, last_bp, cache, lambda n: n)
    return _split_usage(chars, digests, units, last_bp, cache, fake_tokens)


def _split_usage(chars: list[int], digests: list[bytes], units: list[tuple[str, bool]],
                 last_bp: int, cache: set[bytes] | None,
                 tokens: Callable[[int], int]) -> dict[str, int]:
    total = tokens(chars[-1])
    if cache is None or last_bp < 0:
        return {"input_tokens": total, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0}
    hit = max((i for i in range(last_bp + 1) if digests[i] in cache), default=-1)
    cache.update(digests[i] for i, (_, bp) in enumerate(units) if bp)
    read, upto = tokens(chars[hit + 1]), tokens(chars[last_bp + 1])
    return {"input_tokens": total - upto, "cache_creation_input_tokens": upto - read,
            "cache_read_input_tokens": read}
