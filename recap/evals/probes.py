"""Probes: later user turns that ask for a specific stated earlier, as users ask ("what
was the passport number I gave you?"), judged on the request built for that reply.

Kept and shown after a fold say what Recap holds; a probe asks whether the reply to a
user who comes back to a specific could answer it: *answerable at reference* when the
request built for that reply (for Recap, ``build_context`` after the probe is stored as
the newest user turn, so the memories shown are those relevant to it) carries the
specific, word for word. The same probe is judged on the full history cut to the same
window (the latest messages that fit it, or that fit Recap's request when that is
larger: the full history never gets less room than Recap took), as a chat app
without Recap would send.
Pure: the eval (recap.evals.run) asks and rewinds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from recap.evals.facts import Message, Planted, present

DEFAULT_PROBES = 8
# A probe comes back to a specific at least this many messages after it was stated
# (and half the rest of the conversation at most later): by then a fold can have
# condensed it.
MIN_GAP = 8


@dataclass(frozen=True)
class Probe:
    """Ask ``turn`` after message ``after`` (1-based; an assistant reply, or the last
    message); the request for its reply should carry ``fact.expected``."""

    after: int
    fact: Planted
    turn: str


def plan_probes(messages: Sequence[Message], facts: Sequence[Planted], n: int) -> list[Probe]:
    """Up to ``n`` probes, for facts with a question spread over the conversation, each
    asked after the first reply at least half the rest of the conversation (and
    MIN_GAP messages) after the fact was stated; a fact stated too late for that is
    not probed. Ordered by where they are asked."""
    stated = [(at, f) for f in facts if f.question
              if (at := _stated_at(messages, f)) is not None]
    stated.sort(key=lambda pair: pair[0])
    if n < len(stated):  # evenly spread over the conversation, first and last included
        picks = sorted({round(k * (len(stated) - 1) / max(1, n - 1)) for k in range(n)})
        stated = [stated[k] for k in picks]
    replies = [i for i, (role, _) in enumerate(messages, start=1) if role == "assistant"]
    replies.append(len(messages))
    probes: list[Probe] = []
    for at, fact in stated:
        due = at + max(MIN_GAP, (len(messages) - at) // 2)
        after = next((i for i in replies if i >= due), None)
        if after is not None:
            probes.append(Probe(after, fact, as_asked(fact.question or "")))
    return sorted(probes, key=lambda p: p.after)


def _stated_at(messages: Sequence[Message], fact: Planted) -> int | None:
    """The 1-based index of the first user message that states ``fact``."""
    needle = fact.sentence or fact.expected
    return next((i for i, (role, text) in enumerate(messages, start=1)
                 if role == "user" and needle in text), None)


def as_asked(question: str) -> str:
    """``question`` worded as a user comes back to it: "What is my passport number?"
    becomes "what was the passport number I gave you?"."""
    q = question.strip()
    body = q.removesuffix("?")
    if body.startswith("What is the name of my "):
        who = body.removeprefix("What is the name of my ")
        return f"Sorry, what was my {who} called again? I told you earlier."
    if body.startswith("What is my ") and body.endswith(" number"):
        thing = body.removeprefix("What is my ")
        return f"What was the {thing} I gave you earlier?"
    if body.startswith("When is my "):
        return f"When is my {body.removeprefix('When is my ')} again?"
    if body.startswith("What is my favourite "):
        topic = body.removeprefix("What is my favourite ")
        return f"Remind me, what did I say my favourite {topic} was?"
    return f"Remind me of something I told you earlier: {q}"


def recent_window(messages: Sequence[Message], *, tokens: int,
                  count: Callable[[str], int]) -> str:
    """The latest of ``messages`` that fit ``tokens`` (by ``count``), as one text: the
    full history cut to a window, newest first until the next would not fit."""
    kept: list[str] = []
    used = 0
    for _, text in reversed(messages):
        used += count(text)
        if used > tokens:
            break
        kept.append(text)
    return "\n".join(reversed(kept))


def answerable(probe: Probe, request_text: str) -> bool:
    """Whether the request built for ``probe``'s reply carries its specific."""
    return present(probe.fact, request_text)
