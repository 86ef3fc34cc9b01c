"""The Claude stand-in for benchmarks: recap.testing.FakeAnthropic plus fair peer replies.

The test server answers Recap's prompt with a deterministic digest (previous
summary + the first 12 words of each message, cut to 3 * max_tokens characters,
as a model stays under max_tokens). It cannot parse the peers' prompts, so it
would answer them with a one-line summary and flatter them. Here every request
that is not Recap-shaped gets the same digest of its own messages, so all
systems carry summaries of the same size. Token accounting is ours too (tiktoken
over every text block), so all systems are counted by the tokenizer Recap uses;
the fake's own ``usage`` counts characters / 3.5.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from typing import Any

from recap.evals.run import QA_PREFIX, QA_SUFFIX
from recap.testing import (
    FakeAnthropic,
    Reply,
    Request,
    Route,
    drop_specifics,
    ok,
    recap_kind,
    tool_input,
)

_LANGMEM_PREVIOUS = re.compile(
    r"This is summary of the conversation so far: (.*?)\n\nExtend this summary", re.S)
_LANGMEM_ASKS = ("Create a summary of the conversation above:", "This is summary of the "
                 "conversation so far:")
_LC_MESSAGES = re.compile(r'<message type="(\w+)">(.*?)</message>', re.S)
_LC_PREVIOUS = "Here is a summary of the conversation to date:\n\n"


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]


def peer_digest(body: dict[str, Any]) -> str:
    """The digest the stand-in gives Recap, computed from a peer's request."""
    previous = ""
    lines: list[str] = []
    for m in body["messages"]:
        for text in _texts(m["content"]):
            found = _LC_MESSAGES.findall(text)
            if found:  # LangChain middleware: one prompt holding an XML transcript
                for kind, inner in found:
                    inner = html.unescape(inner)
                    if inner.startswith(_LC_PREVIOUS):
                        previous = inner[len(_LC_PREVIOUS):]
                        continue
                    role = {"human": "user", "ai": "assistant"}.get(kind, kind)
                    lines.append(f"The {role} said: {' '.join(inner.split()[:12])}")
                continue
            prev = _LANGMEM_PREVIOUS.search(text)
            if prev:
                previous = prev.group(1).strip()
            if text.startswith(_LANGMEM_ASKS):
                continue
            lines.append(f"The {m['role']} said: {' '.join(text.split()[:12])}")
    out = "\n".join(([previous] if previous else []) + lines) or "The conversation was empty."
    cap = 3 * int(body.get("max_tokens", 1024))
    while len(out) > cap and "\n" in out:
        out = out.split("\n", 1)[1]
    return out


def request_tokens(body: dict[str, Any], count: Any) -> int:
    """Input tokens of one request: system + every text block (no per-message overhead)."""
    system = body.get("system") or ""
    total = sum(count(t) for t in _texts(system)) if system else 0
    for m in body["messages"]:
        total += sum(count(t) for t in _texts(m["content"]))
    return total


def peer_route(request: Request) -> Reply | None:
    """Any request that is not Recap's own is a peer's: it gets :func:`peer_digest`."""
    return None if recap_kind(request.body) else ok(peer_digest(request.body))


class BenchFake(FakeAnthropic):
    """FakeAnthropic that answers peer prompts with the same digest Recap gets.

    Recap's requests take the base server's path (script, faults, default answers);
    any other request is a peer's and gets :func:`peer_digest` of its own messages.
    With ``neutral`` on (recap.testing.neutral) every caller gets the neutral rule
    instead, peers and Recap alike.
    """

    def __init__(self, *, routes: Sequence[Route] = (), log_errors: bool = True,
                 neutral: bool = False) -> None:
        super().__init__(routes=[*routes, self._peer], log_errors=log_errors, neutral=neutral)

    def _peer(self, request: Request) -> Reply | None:
        return None if self.neutral else peer_route(request)


_WORD = re.compile(r"\w+", re.U)


def reader_answer(body: dict[str, Any], question: str) -> str:
    """The stand-in reader's answer to a question about its context: the line of the
    context (system + earlier turns) sharing the most words with the question.
    It measures whether the detail is in front of the model, not a model's reading."""
    wanted = {w.casefold() for w in _WORD.findall(question) if len(w) > 3}
    lines = [ln for t in _texts(body.get("system") or "") for ln in t.splitlines()]
    for m in body["messages"]:  # the last turn too: with caching the memories ride there
        lines += [ln for t in _texts(m["content"]) for ln in t.splitlines()
                  if not any(q.strip() and q.strip() in ln for q in question.splitlines())]
    best, score = "I do not know.", 0
    for line in lines:
        hits = len(wanted & {w.casefold() for w in _WORD.findall(line)})
        if hits > score:
            best, score = line.strip(), hits
    return best


_USER_TURN = re.compile(r'<message role="user">\n(.*?)\n</message>', re.S)
_FIRST_PERSON = re.compile(r"[^.!?\n]*\bmy\b[^.!?\n]{2,100}\b(?:is|are)\b[^.!?\n]{2,80}[.!?]",
                           re.I)


def first_person_facts(prompt: str) -> list[dict[str, Any]]:
    """What the stand-in mines as durable facts: the user's first-person statements
    ("... my X is Y."), as a model would keep "my manager is called Ingrid"."""
    facts: dict[str, dict[str, Any]] = {}
    for turn in _USER_TURN.findall(prompt):
        for sentence in _FIRST_PERSON.findall(html.unescape(turn)):
            text = "The user said: " + " ".join(sentence.split())
            facts.setdefault(text, {"fact": text, "category": "personal", "importance": 4})
    return list(facts.values())


def qa_route(request: Request) -> Reply | None:
    """A --qa question (a user turn starting with QA_PREFIX) gets :func:`reader_answer`."""
    asked = request.last_user_text
    if QA_PREFIX not in asked:
        return None
    # The question alone: blocks the app appends to the same turn (memories, recalled
    # lines) are context to read, not part of the question.
    question = asked.split(QA_PREFIX, 1)[1].split(QA_SUFFIX, 1)[0]
    return ok(reader_answer(request.body, question))


class EvalFake(BenchFake):
    """BenchFake for ``recap eval``: answers --qa questions with :func:`reader_answer`,
    and mines the user's first-person statements as facts in Recap's summary calls
    (:func:`first_person_facts`, losing the same share of specifics as the rest).
    With ``neutral`` on, it mines nothing: the neutral rule answers every summary."""

    def __init__(self, *, neutral: bool = False) -> None:
        super().__init__(routes=[qa_route, self._mine], neutral=neutral)

    def _mine(self, request: Request) -> Reply | None:
        if self.neutral or request.tool is None or recap_kind(request.body) != "summary":
            return None
        fraction, seed = self.lossy_fraction, self.lossy_seed
        data = tool_input(request.body, request.prompt, None, fraction=fraction, seed=seed)
        for fact in first_person_facts(request.prompt):
            fact["fact"] = drop_specifics(fact["fact"], fraction, seed=seed, kind="facts")
            data["facts"].append(fact)
        return ok(json.dumps(data))
