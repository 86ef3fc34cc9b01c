"""The lines the retention guard keeps, ranked (pure): each entry with the rank
and origin of the specific it was made for (recap.core.retention.salience), how the best-ranked
fill the details section and what the rest become as memories."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from recap.core.retention.details import DETAILS_HEADERS
from recap.core.retention.entries import entries_for
from recap.core.retention.salience import Origin, Rank, Salience
from recap.core.specifics import first_holding

# A guard-made memory's importance by the rank of what it keeps: the memories
# block shows the best-ranked first (recap.core.memories.recall.rank_key).
IMPORTANCE = {Rank.STATED: 4, Rank.REFERRED: 3, Rank.USED: 3, Rank.REST: 2}
# Whose line a guard-made memory is (recap.models.SOURCE_KINDS): a tool result's,
# the assistant's, a pasted document's; ``guard`` for a line of the user's own
# words or of the previous summary (a verbatim window, kept in the session's scope).
MEMORY_SOURCE = {Origin.TOOL: "tool", Origin.ASSISTANT: "assistant",
                 Origin.DOCUMENT: "document", Origin.USER: "guard", Origin.SUMMARY: "guard"}


@dataclass(frozen=True)
class Line:
    """A line the guard keeps: its rank (the best of the specifics it was made
    for), who first said them, and the entry."""

    rank: Rank
    origin: Origin
    text: str


def lines_for(lost: Sequence[str], texts: Sequence[str], found: Sequence[frozenset[str]],
             sal: Salience) -> list[Line]:
    """The entry lines (recap.core.retention.entries.entries_for) of ``lost`` (best-ranked
    first), each with the rank and origin of the specific it was made for."""
    lines = entries_for(lost, texts, found)
    first = first_holding(lost, lines)
    out: list[Line] = []
    taken: set[str] = set()
    for x in lost:
        at = first.get(x)
        if at is not None and lines[at] not in taken:
            taken.add(lines[at])
            out.append(Line(sal.rank(x), sal.origin(x), lines[at]))
    return out


def by_rank(lines: Sequence[Line], *, cap: int,
             count: Callable[[str], int]) -> tuple[list[Line], list[Line]]:
    """(the details section's lines, the memories'): the best-ranked ``lines`` (in
    the order given among equals) that fit ``cap`` tokens with their origins'
    headers; the rest."""
    details: list[Line] = []
    rest: list[Line] = []
    room = cap
    headed: set[Origin] = set()
    for line in sorted(lines, key=lambda x: x.rank):  # stable: oldest first among equals
        cost = count("\n- " + line.text) + (
            0 if line.origin in headed else count("\n\n" + DETAILS_HEADERS[line.origin]))
        if cost <= room:
            details.append(line)
            headed.add(line.origin)
            room -= cost
        else:
            rest.append(line)
    return details, rest


def rank_counts(specifics: Iterable[str],
                sal: Salience) -> tuple[tuple[int, int, int, int], int]:
    """(how many of ``specifics`` have each rank, in Rank order; how many are left
    in the archive instead: :meth:`Salience.archivable`)."""
    ranks = [0, 0, 0, 0]
    archived = 0
    for x in specifics:
        if sal.archivable(x):
            archived += 1
        else:
            ranks[sal.rank(x)] += 1
    return (ranks[0], ranks[1], ranks[2], ranks[3]), archived
