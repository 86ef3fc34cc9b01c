"""The retention guard for a summary rebuilt from the archive (pure).

``recap resummarize`` asks the model for a new summary of every archived
message, from scratch. Its answer replaces a summary that kept every specific
(the retention guard's invariant, recap.core.retention.guard), so it goes through the same
guard as a fold, with the current summary as the previous one: every specific
the current summary keeps, and every specific of the archived messages but
those a tool returned and nothing used (they stay in the archive, where recall
finds them), is kept in the new summary, in its details section, or as a
memory of the session. Nothing is held back: a rebuild condenses nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from recap.core.prompts.echo import strip_echo
from recap.core.prompts.summarize import Turn
from recap.core.retention.guard import (
    GuardCounts,
    Settlement,
    default_salience,
    missing,
    required,
    settle,
    strip_details,
)
from recap.errors import UnusableSummary


def guard_rebuild(answer: str, *, turns: Sequence[Turn], current: str | None,
                  details_cap: int, count: Callable[[str], int], corpus: str = "",
                  archive: bool = True) -> tuple[Settlement, GuardCounts]:
    """(what the rebuild writes, the guard's counts) for the model's ``answer`` on
    ``turns`` (every archived message, as the guard reads them), replacing
    ``current``. ``corpus``: what Recap sent (recap.core.prompts.echo.sent_corpus), cut
    from the answer; ``archive``: the archive keeps the messages (what a tool
    returned and nothing used needs no other home). Raises UnusableSummary when
    the answer only echoes Recap's prompt."""
    summary = strip_echo(answer, corpus)
    if not strip_details(summary).strip():
        raise UnusableSummary("the rebuilt summary only echoes Recap's own prompt; not applied")
    previous = strip_echo(current or "", corpus) or None
    salience = dataclasses.replace(default_salience(turns), archive=archive)
    needed = required(turns, previous, salience)
    lost = missing(needed, summary=summary)
    settled = settle(turns=turns, units=[[t.id] for t in turns], previous=previous,
                     summary=summary, facts=(), details_cap=details_cap, count=count,
                     spill=True, corpus=corpus, salience=salience)
    counts = GuardCounts(
        specifics_total=len(needed), specifics_missing_before_repair=len(lost),
        specifics_missing_after=len(lost), specifics_in_details=settled.specifics_in_details,
        specifics_to_memories=settled.specifics_to_memories, messages_held_back=0,
        repaired=False, specifics_stated=settled.by_rank[0],
        specifics_referred=settled.by_rank[1], specifics_used=settled.by_rank[2],
        specifics_rest=settled.by_rank[3], specifics_archived=settled.archived)
    return settled, counts
