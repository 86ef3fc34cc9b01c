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
of their words along; an echo (the previous summary's words again) brings none.
Linear in the texts' length.
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
# And at least this share of the summary's words come from the previous summary: it
# is the previous one again, reworded at most (an answer about something else is
# not an echo, and the retention guard judges what it lost).
ECHO_SHARE = 0.6


def words(text: str) -> set[str]:
    """The distinct words (three letters or more) of ``text``, case folded."""
    return {w.casefold() for w in _WORD.findall(text)}


def frozen(previous: str | None, summary: str, batch: Iterable[str]) -> str | None:
    """Why ``summary`` (the model's update of ``previous`` with the ``batch`` texts)
    is frozen, or None when it is an update. A first summary (no ``previous``) and
    any answer to a batch with little new in it are never frozen; an empty one is
    the caller's to refuse."""
    if not previous or not previous.strip():
        return None
    before = words(previous)
    novel: set[str] = set()
    for text in batch:
        novel |= words(text) - before
    if len(novel) < MIN_NOVEL:
        return None
    if " ".join(summary.split()) == " ".join(previous.split()):
        return "the model returned the previous summary unchanged"
    said = words(summary)
    if not said or len(said & before) < ECHO_SHARE * len(said):
        return None
    added = len(novel & said)
    warranted = min(MIN_ADDED, max(1, int(MIN_ADDED_SHARE * len(novel))))
    if added < warranted:
        return (f"the summary adds {added} of the {len(novel)} new words of the condensed "
                f"messages (fewer than {warranted}): the model ignored them")
    return None
