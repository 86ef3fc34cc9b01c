"""Token estimates with tiktoken, counted once per message when it is written.

Claude's tokenizer is not published, so every count here is an estimate. We use
cl100k_base: on English and code it lands within a few percent of what the
Messages API reports in ``usage``, it is the smaller of the two common BPE files
(fast to load in every worker process), and the API's own ``usage`` numbers are
what the audit rows record for cost.
"""

from __future__ import annotations

import functools
import os

from recap.core.content.message import Message
from recap.errors import ConfigError

ENCODING = "cl100k_base"


@functools.cache
def _encoding():  # type: ignore[no-untyped-def]
    import tiktoken

    try:
        return tiktoken.get_encoding(ENCODING)
    except Exception as exc:  # network error, missing cache file, bad hash
        cache = os.environ.get("TIKTOKEN_CACHE_DIR", "<unset>")
        raise ConfigError(
            f"cannot load the tiktoken encoding {ENCODING!r} ({type(exc).__name__}: {exc}); "
            f"on an offline machine set TIKTOKEN_CACHE_DIR to a directory holding its "
            f"cached file (TIKTOKEN_CACHE_DIR is {cache}); on a connected machine, "
            f"`recap tokenizer export DIR` writes that file to DIR") from exc


# A job counts the same texts more than once (its batch against the job's token
# budget, then again when chunking it into requests; the prompt template on
# every call), so recent counts of texts up to this size are kept: at most
# _MEMO_ENTRIES x _MEMO_MAX_CHARS characters held.
_MEMO_MAX_CHARS = 16_000
_MEMO_ENTRIES = 256


def count_tokens(text: str) -> int:
    """Estimated tokens in ``text`` (special-token markers count as plain text)."""
    if not text:
        return 0
    if len(text) <= _MEMO_MAX_CHARS:
        return _count_remembered(text)
    return _count(text)


def _count(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def message_tokens(msg: Message) -> int:
    """The stored token estimate of a prepared message: its text, or for a content
    array everything a request can carry plus the image/document estimates."""
    if msg.blocks is None:
        return count_tokens(msg.content)
    return count_tokens(msg.countable) + msg.media_tokens


@functools.lru_cache(maxsize=_MEMO_ENTRIES)
def _count_remembered(text: str) -> int:
    return _count(text)


def split_by_tokens(text: str, max_tokens: int) -> list[str]:
    """Split ``text`` into pieces of at most ``max_tokens`` tokens each."""
    tokens = _encoding().encode(text, disallowed_special=())
    enc = _encoding()
    return [enc.decode(tokens[i:i + max_tokens]) for i in range(0, len(tokens), max_tokens)]
