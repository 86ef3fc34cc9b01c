"""The prompt of the retention guard's one repair call (pure): the specifics the
summary missed, each with its context, and the summary to revise."""

from __future__ import annotations

from collections.abc import Sequence

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


def repair_prompt(summary: str, items: Sequence[str]) -> str:
    """The prompt of the one repair call; ``items`` are :func:`entry` lines."""
    shown = list(items)[:MAX_REPAIR_ITEMS]
    def safe(text: str) -> str:
        return defuse(_SUMMARY_TAG, escape(" ".join(text.split()) if "\n" in text else text))

    return REPAIR_PROMPT.format(items="\n".join(f"- {safe(i)}" for i in shown),
                                summary=defuse(_SUMMARY_TAG, escape(summary)))
