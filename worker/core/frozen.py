"""Whether a fold's new summary is frozen: the model ignored the new messages (pure).

A small model asked to update a summary often returns the summary it was given,
word for word or nearly, and leaves the new messages out. Applied, such a fold
deletes those messages with nothing of them in the summary. So a summary that is
the previous one, or adds less of the new messages than they warrant, is a failed
answer: the summarizer asks again another way before anything is deleted
(recap.llm.summarizer), and the run counts it (``frozen_answers``).

The measure is words: the distinct words of the new messages that the previous
summary does not have (``novel``), and how many of them the new summary has
(``added``). Any real update of messages with something new in them brings some
of their words along; an echo brings none. Linear in the texts' length.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD = re.compile(r"\w{3,}")
# Below this many novel words in the new messages ("ok, thanks"), no summary is
# expected to change: nothing is judged.
MIN_NOVEL = 12
# A summary that adds fewer of the new messages' novel words than this is frozen...
MIN_ADDED = 3
# ... or fewer than this share of them, whichever is smaller (a batch rich in new
# words warrants more than a few).
MIN_ADDED_SHARE = 0.02


def words(text: str) -> set[str]:
    """The distinct words (three letters or more) of ``text``, case folded."""
    return {w.casefold() for w in _WORD.findall(text)}


def frozen(previous: str | None, summary: str, batch: Iterable[str]) -> str | None:
    """Why ``summary`` (the model's update of ``previous`` with the ``batch`` texts)
    is frozen, or None when it is an update. A first summary (no ``previous``) is
    never frozen; an empty one is the caller's to refuse."""
    if not previous or not previous.strip():
        return None
    if " ".join(summary.split()) == " ".join(previous.split()):
        return "the model returned the previous summary unchanged"
    before = words(previous)
    novel: set[str] = set()
    for text in batch:
        novel |= words(text) - before
    if len(novel) < MIN_NOVEL:
        return None
    added = len(novel & words(summary))
    warranted = min(MIN_ADDED, max(1, int(MIN_ADDED_SHARE * len(novel))))
    if added < warranted:
        return (f"the summary adds {added} of the {len(novel)} new words of the condensed "
                f"messages (fewer than {warranted}): the model ignored them")
    return None
