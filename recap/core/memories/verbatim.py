"""A memory shown outside its session is the user's own words (pure).

A fact mined from a batch reaches the user's other sessions (kind ``user``, the
user's scope) only as a **verbatim span of what the user typed** in that batch:
their own words (recap.core.memories.provenance.own_text: not what they quote or paste,
not a document or a tool result), chosen either by the model (its fact is such a
span, white space, case and a closing full stop aside) or here, never
paraphrased. A model's paraphrase carries the model's words, and with them
whatever it read elsewhere (a tool result's domain, a pasted handle, a plain-word
password): it stays with its session as ``unverified``.

When the model paraphrases a fact that the batch grounds in the user's words
(recap.core.memories.provenance.attribute says ``user``), the span is chosen here: the
shortest run of at most :data:`MAX_SPAN_SENTENCES` consecutive sentences of one
user turn that holds every specific and name of the fact and most of its words
and reads as no instruction. That span is stored as the user's memory beside
the paraphrase, which stays in its session. So a defence never wins by refusing
the user's own facts: what they said in their own words still follows them.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Iterable, Sequence

from recap.core.memories.facts import MAX_FACT_CHARS, Fact
from recap.core.memories.provenance import (
    GROUNDED_SHARE,
    attribute,
    content_words,
    instruction_like,
    own_specifics,
)

# Sentences a chosen span may run over (a fact and the sentence that names its
# subject: "My daughter is Ines. She starts school in Porto on 2026-09-14.").
MAX_SPAN_SENTENCES = 3
# What is searched for a span: at most this many characters of the batch's own
# words, and this many sentences (a longer batch is a paste, not a statement;
# a span not found there only keeps the fact in its session).
MAX_SEARCH_CHARS = 200_000
MAX_SEARCH_SENTENCES = 2_000
# Where a sentence ends: after . ! ? and white space (a decimal point does not end
# one), after a CJK full stop, at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "“": '"', "”": '"'})
_EDGE = " \t.,;:!?…\"'"


def flat(text: str) -> str:
    """``text`` as spans are compared: NFKC, casefolded, apostrophes and quotation
    marks unified, white space collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_QUOTES)
    return " ".join(text.split())


def is_span(fact: str, own: Iterable[str]) -> bool:
    """Whether ``fact`` (without its closing punctuation) is a stretch of one of
    ``own`` (the user's own words) that starts and ends at a word's edge."""
    return _within(fact, [flat(text) for text in own])


def _within(fact: str, flats: Sequence[str]) -> bool:
    """:func:`is_span` against texts already :func:`flat`."""
    want = flat(fact).strip(_EDGE)
    if not want:
        return False
    for have in flats:
        at = have.find(want)
        while at >= 0:
            end = at + len(want)
            if not (at and _inside(have[at - 1]) and want[0].isalnum()) and not (
                    end < len(have) and _inside(have[end]) and want[-1].isalnum()):
                return True
            at = have.find(want, at + 1)
    return False


def _inside(ch: str) -> bool:
    """Whether ``ch`` next to a span's letter would continue its word ("I'm")."""
    return ch.isalnum() or ch == "'"


Sentence = tuple[str, frozenset[str]]  # its text and its content words


def sentences(own: Iterable[str]) -> list[list[Sentence]]:
    """The sentences of each of ``own`` (white space collapsed) with their content
    words (recap.core.memories.provenance.content_words), within :data:`MAX_SEARCH_CHARS`
    and :data:`MAX_SEARCH_SENTENCES` in all."""
    out: list[list[Sentence]] = []
    budget, count = MAX_SEARCH_CHARS, 0
    for text in own:
        text = text[:budget]
        budget -= len(text)
        found = [s for s in (" ".join(part.split()) for part in _SENTENCE_END.split(text)) if s]
        found = found[:MAX_SEARCH_SENTENCES - count]
        count += len(found)
        out.append([(s, frozenset(content_words(s))) for s in found])
        if budget <= 0 or count >= MAX_SEARCH_SENTENCES:
            break
    return out


def user_span(fact: str, turns: Sequence[Sequence[Sentence]]) -> str | None:
    """The shortest run of at most :data:`MAX_SPAN_SENTENCES` consecutive sentences
    of one turn (``turns``: :func:`sentences`) that states ``fact``: every specific
    and name of it, most of its words (recap.core.memories.provenance.grounded), no
    instruction; each sentence naming some of the fact's words, none a question
    or an introduction ("Translate this:"); None if there is none."""
    wanted = content_words(fact)
    if not wanted:
        return None
    best: str | None = None
    for said in turns:
        for i in range(len(said)):
            words: set[str] = set()
            for j in range(i, min(i + MAX_SPAN_SENTENCES, len(said))):
                text, its = said[j]
                # A question or an introduction states nothing, and a sentence with
                # none of the fact's words only pads the span.
                if text.endswith(("?", ":")) or not its.intersection(wanted):
                    break
                words |= its
                span = " ".join(s for s, _ in said[i:j + 1])
                if len(span) > MAX_FACT_CHARS or (best is not None and len(span) >= len(best)):
                    break
                if (sum(w in words for w in wanted) >= GROUNDED_SHARE * len(wanted)
                        and own_specifics(fact, [span]) and not instruction_like(span)):
                    best = span
                    break
    return best


def attribute_facts(facts: Sequence[Fact], own: Sequence[str]) -> list[Fact]:
    """``facts`` (as the model answered them) with the kind each is stored with:
    a fact the batch grounds in the user's words (recap.core.memories.provenance.attribute)
    is the user's only if it is a verbatim span of them (:func:`is_span`); else it
    stays ``unverified`` and the user's span that states it (:func:`user_span`),
    if any, is added as the user's. Every other fact keeps the kind attribute gives."""
    out: list[Fact] = []
    flats: list[str] | None = None  # read once, when a fact claims the user
    turns: list[list[Sentence]] | None = None  # read once, when a paraphrase needs it
    for f in facts:
        kind = attribute(f.fact, f.source, own)
        if kind == "user" and flats is None:
            flats = [flat(text) for text in own]
        if kind != "user" or _within(f.fact, flats or []):
            out.append(dataclasses.replace(f, source=kind))
            continue
        out.append(dataclasses.replace(f, source="unverified"))
        turns = sentences(own) if turns is None else turns
        span = user_span(f.fact, turns)
        if span is not None:
            out.append(dataclasses.replace(f, fact=span, source="user"))
    return out
