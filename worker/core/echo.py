"""Recap's own words in a model's answer (pure).

A weak model echoes what it was sent: the prompt, the instructions, the tool
schema's descriptions ("The updated summary text, at most 1024 tokens."). Such
an echo is not the conversation's content: its numbers are not specifics to
keep, and it has no place in a summary. :func:`strip_echo` removes every
sentence (or line) of a text that is a piece of what Recap itself sent.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

# A sentence shorter than this (in words) is too common to call an echo: "Yes.",
# "3 March." could be the conversation's own.
MIN_ECHO_WORDS = 4

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n")
_SPACE = re.compile(r"\s+")
_MARKUP = re.compile(r"</?[a-z_]+>|[\"'«»“”`*#]")


def _flat(text: str) -> str:
    text = _MARKUP.sub(" ", unicodedata.normalize("NFKC", text).casefold())
    return _SPACE.sub(" ", text).strip()


def sent_corpus(sent: Iterable[str]) -> str:
    """The texts Recap sends (prompts, instructions, schema descriptions), flattened
    for :func:`strip_echo`: compute once per caller, pass to each call."""
    return "\n".join(_flat(t) for t in sent)


def is_echo(sentence: str, corpus: str) -> bool:
    """Whether ``sentence`` is a piece of ``corpus`` (a :func:`sent_corpus`)."""
    flat = _flat(sentence).strip(" -.,;:!?")
    return len(flat.split()) >= MIN_ECHO_WORDS and flat in corpus


def strip_echo(text: str, corpus: str) -> str:
    """``text`` without the sentences that echo ``corpus``; lines keep their order,
    a line left empty by the cut is dropped."""
    if not corpus or not text:
        return text
    out: list[str] = []
    for line in text.split("\n"):
        parts = [p for p in re.split(r"(?<=[.!?。！？])\s+", line)]
        kept = [p for p in parts if not is_echo(p, corpus)]
        if len(kept) == len(parts):
            out.append(line)
        elif any(p.strip() for p in kept):
            out.append(" ".join(kept))
    return "\n".join(out)
