"""The scripted conversation `recap demo` feeds, read from ``conversation.json``.

An SRE debugging a production rollout: 80 scripted messages (names, dates,
amounts, file paths, pasted logs and configs, so messages are as long as real
ones), then day-by-day follow-ups with metrics, 1,000 messages in all,
alternating user/assistant. The file is data, shipped as package data; the
benchmarks (recap.bench) read it through :func:`load` too.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

DATA_FILE = "conversation.json"


@cache
def _messages() -> tuple[tuple[str, str], ...]:
    raw = json.loads(files("recap.demo").joinpath(DATA_FILE).read_text(encoding="utf-8"))
    return tuple((m["role"], m["content"]) for m in raw)


def available() -> int:
    """How many messages the file holds (the most :func:`load` can return)."""
    return len(_messages())


def load(n: int) -> list[tuple[str, str]]:
    """The first ``n`` messages as ``(role, content)``; ValueError past the file's end.

    No cycling: a repeated conversation would only repeat summaries, so asking
    for more than :func:`available` is an error the caller reports.
    """
    messages = _messages()
    if not 0 <= n <= len(messages):
        raise ValueError(f"the demo conversation has {len(messages)} messages; "
                         f"asked for {n}")
    return list(messages[:n])
