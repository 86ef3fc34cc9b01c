"""The retention guard's one repair call (pure): its prompt, and when the call is
worth making for a model.

The prompt names the specifics the summary missed, each with its context, and
the summary to revise (:func:`repair_prompt`).

A repair call asks the model to put the specifics its summary missed back in.
A strong model usually does; a weak one may return the same summary every time,
and each call is paid for. So the guard keeps a running success rate per model
over its latest runs that had something missing, and stops calling repair when
it does not help: the details section and memories keep those specifics anyway.
A skipped model is probed again now and then, so a model that improves (or a
prompt that changed) gets its repairs back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from recap.core.prompts.summarize import escape
from recap.core.text import defuse, tag_opener

# A repair prompt names at most this many specifics; the rest are settled by Recap.
MAX_REPAIR_ITEMS = 200

REPAIR_PROMPT = """The summary below omits these specifics from the conversation (each with a
few words of its context):
{items}

Revise the summary to include each of them, concisely, saying what it refers to. Keep
everything else it says. Answer with the revised summary only.

<summary>
{summary}
</summary>"""

_SUMMARY_TAG = tag_opener(["summary"])

# The model's latest runs with something missing that the rate is taken over.
REPAIR_WINDOW = 20
# Fewer repair calls than this in the window: too few to judge, keep calling.
REPAIR_MIN_TRIES = 5
# Below this share of repair calls that reduced what was missing, stop calling.
REPAIR_MIN_SUCCESS = 0.2
# After this many skipped runs in a row, call repair once more (a probe).
REPAIR_PROBE_EVERY = 10


class RepairOutcome(NamedTuple):
    """One earlier run with something missing: whether repair was called, and
    whether it reduced what was missing."""

    called: bool
    helped: bool


def success_rate(recent: Sequence[RepairOutcome]) -> float | None:
    """The share of repair calls in ``recent`` that helped; None without any."""
    tried = [o.helped for o in recent if o.called]
    return sum(tried) / len(tried) if tried else None


def should_repair(recent: Sequence[RepairOutcome]) -> bool:
    """Whether to call repair now, given the model's ``recent`` runs (newest first,
    at most REPAIR_WINDOW)."""
    recent = recent[:REPAIR_WINDOW]
    if sum(o.called for o in recent) < REPAIR_MIN_TRIES:
        return True
    rate = success_rate(recent)
    if rate is None or rate >= REPAIR_MIN_SUCCESS:
        return True
    skipped = next((i for i, o in enumerate(recent) if o.called), len(recent))
    return skipped >= REPAIR_PROBE_EVERY


def repair_prompt(summary: str, items: Sequence[str]) -> str:
    """The prompt of the one repair call; ``items`` are
    :func:`recap.core.retention.entries.entry` lines."""
    shown = list(items)[:MAX_REPAIR_ITEMS]
    def safe(text: str) -> str:
        return defuse(_SUMMARY_TAG, escape(" ".join(text.split()) if "\n" in text else text))

    return REPAIR_PROMPT.format(items="\n".join(f"- {safe(i)}" for i in shown),
                                summary=defuse(_SUMMARY_TAG, escape(summary)))
