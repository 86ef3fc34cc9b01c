"""The offline extractive summarizer: a stand-in that needs no network, not Claude."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from recap.core.prompts.summarize import Turn
from recap.errors import UnusableSummary
from recap.llm.client import Usage
from recap.llm.summarizer import SummaryResult

OFFLINE_MODEL = "offline-extractive"

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass
class OfflineSummarizer:
    """An extractive stand-in that needs no network. Not Claude: labelled as such.

    It keeps the first sentence of each message (clipped) after the previous
    summary, and drops the oldest lines once over ``max_words``.
    """

    model: str = OFFLINE_MODEL
    max_words: int = 400

    def summarize(self, previous: str | None, turns: Sequence[Turn], *,
                  usage: Usage | None = None, facts: bool = False,
                  known: Sequence[tuple[int, str]] = ()) -> SummaryResult:
        """``facts`` and ``known`` are accepted and ignored: the stand-in mines nothing."""
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
        if usage is not None:
            usage.calls += 1
        return SummaryResult(text=text, model=self.model, calls=1)

    def repair(self, summary: str, items: Sequence[str], *, usage: Usage) -> str | None:
        """No model to ask: the retention guard settles what is missing by itself."""
        return None
