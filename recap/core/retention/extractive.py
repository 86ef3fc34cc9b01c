"""The fold Recap keeps by itself when no way of asking the model gave a usable
summary (pure).

Every way of asking (recap.llm.summarizer) can fail on one batch: a weak model
answers with the previous summary, nothing, or text cut off at its cap. The
session must still come under its budget, so the job keeps the batch
extractively instead: the previous summary's prose, then a labelled section
with the opening words of each message (:data:`HEADER`). The retention guard
then keeps the specifics these lines miss (details, memories), and the archive
keeps the messages themselves. The next fold asks the model again, with this
summary as the previous one. Linear in the texts' length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from recap.core.prompts.summarize import Turn
from recap.core.retention.details import strip_details

# The label a reader of the context (the chat model) and of the audit sees: this
# part of the summary was not written by a model.
HEADER = "Kept extractively by Recap (the model gave no usable summary; not written by the model):"
# Words of each message kept on its line, and characters (one "word" may be a
# pasted blob).
LINE_WORDS = 30
LINE_CHARS = 300


def line(turn: Turn) -> str:
    """One message as a line of the section: who, and its first words."""
    words = turn.content[:LINE_CHARS * 4].split()
    said = " ".join(words[:LINE_WORDS])
    if len(said) > LINE_CHARS or len(words) > LINE_WORDS or len(turn.content) > LINE_CHARS * 4:
        said = said[:LINE_CHARS].rstrip() + " ..."
    who = "The user" if turn.role == "user" else f"The {turn.role}"
    return f"- {who} said: {said}"


def is_extractive(summary: str | None) -> bool:
    """Whether ``summary`` has a section Recap kept extractively."""
    return bool(summary) and HEADER in (summary or "").split("\n")


def fold(previous: str | None, turns: Sequence[Turn], *, max_tokens: int,
         count: Callable[[str], int]) -> str:
    """``turns`` kept extractively after ``previous`` (its details section left out:
    the retention guard rebuilds it), within ``max_tokens`` by ``count``: the oldest
    lines of the section go first, then the prose is cut from its end. Never empty."""
    body = strip_details(previous or "").rstrip()
    lines = [line(t) for t in turns]
    if is_extractive(body):  # the section of an earlier fallback goes on
        body += "\n"
    else:
        lines.insert(0, HEADER)
        body = f"{body}\n\n" if body else ""
    # Drop whole lines from the start of the new ones (the header stays) while over,
    # counting each line once.
    start = 1 if lines and lines[0] == HEADER else 0
    sizes = [count(ln) + 1 for ln in lines]
    total = count(body) + sum(sizes)
    first = start
    while total > max_tokens and first < len(lines) - 1:
        total -= sizes[first]
        first += 1
    kept = "\n".join(lines[:start] + lines[first:])
    text = body + kept
    if total > max_tokens or count(text) > max_tokens:
        head = _head(body, max(0, max_tokens - count(kept) - 2), count)
        text = f"{head}\n\n{kept}" if head else kept
    return text.strip() or HEADER


def _head(text: str, room: int, count: Callable[[str], int]) -> str:
    """The longest run of ``text``'s first lines within ``room`` tokens."""
    out: list[str] = []
    used = 0
    for ln in text.rstrip().split("\n"):
        need = count(ln) + 1
        if used + need > room:
            break
        out.append(ln)
        used += need
    return "\n".join(out).rstrip()
