"""Recap's own words in a model's answer (pure).

A weak model echoes what it was sent: the prompt, the instructions, the tool
schema's descriptions ("The updated summary text, at most 1024 tokens."). Such
an echo is not the conversation's content: its numbers are not specifics to
keep, and it has no place in a summary. :func:`strip_echo` removes every
sentence (or line) of a text that is a piece of what Recap itself sent.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

# A sentence shorter than this (in words) is too common to call an echo: "Yes.",
# "3 March." could be the conversation's own.
MIN_ECHO_WORDS = 4

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_SPACE = re.compile(r"\s+")
_MARKUP = re.compile(r"</?[a-z_]+>|[\"'«»“”`*#]")


def _flat(text: str) -> str:
    text = _MARKUP.sub(" ", unicodedata.normalize("NFKC", text).casefold())
    return _SPACE.sub(" ", text).strip()


def sent_corpus(sent: Iterable[str]) -> str:
    """The texts Recap sends (prompts, instructions, schema descriptions), flattened
    for :func:`strip_echo`: compute once per caller, pass to each call."""
    return _corpus(tuple(sent))


# Pure functions of their arguments, remembered: a job's texts are the same on
# every job (the corpus) or read more than once (the summary, checked again when
# the guard settles it), and NFKC-folding them again costs CPU for nothing.
@functools.lru_cache(maxsize=16)
def _corpus(sent: tuple[str, ...]) -> str:
    return "\n".join(_flat(t) for t in sent)


@functools.lru_cache(maxsize=4096)
def is_echo(sentence: str, corpus: str) -> bool:
    """Whether ``sentence`` is a piece of ``corpus`` (a :func:`sent_corpus`)."""
    flat = _flat(sentence).strip(" -.,;:!?")
    return len(flat.split()) >= MIN_ECHO_WORDS and flat in corpus


@functools.lru_cache(maxsize=256)
def strip_echo(text: str, corpus: str) -> str:
    """``text`` without the sentences that echo ``corpus``; lines keep their order,
    a line left empty by the cut is dropped."""
    if not corpus or not text:
        return text
    out: list[str] = []
    for line in text.split("\n"):
        parts = _SENTENCE_END.split(line)
        kept = [p for p in parts if not is_echo(p, corpus)]
        if len(kept) == len(parts):
            out.append(line)
        elif any(p.strip() for p in kept):
            out.append(" ".join(kept))
    return "\n".join(out)
