"""The lines the retention guard keeps, ranked (pure): each entry with the rank
and origin of the specific it was made for (recap.core.retention.salience), how the best-ranked
fill the details section and what the rest become as memories."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from recap.core.memories.channels import CHANNELS, foreign_spans
from recap.core.retention.details import DETAILS_HEADERS
from recap.core.retention.entries import Kept, entries_at, normalized
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
              sal: Salience, roles: Sequence[str] = ()) -> list[Line]:
    """The entry lines (recap.core.retention.entries.entries_for) of ``lost`` (best-ranked
    first), each with the rank and origin of the specific it was made for. With
    ``roles`` (each text's author), a line cut from what a user quoted, pasted or
    attached, or from a tool result, takes that channel as its origin, whoever
    first said its specific: the words kept around it are not the user's."""
    kept = entries_at(lost, texts, found)
    lines = [k.line for k in kept]
    first = first_holding(lost, lines)
    foreign = _Foreign(texts, roles)
    out: list[Line] = []
    taken: set[str] = set()
    for x in lost:
        at = first.get(x)
        if at is not None and lines[at] not in taken:
            taken.add(lines[at])
            out.append(Line(sal.rank(x), foreign.origin(kept[at], sal.origin(x)), lines[at]))
    return out


# A foreign channel (recap.core.memories.channels) as the origin of a line cut from it.
_CHANNEL_ORIGINS = {"quoted": Origin.DOCUMENT, "pasted": Origin.DOCUMENT,
                    "document": Origin.DOCUMENT, "tool": Origin.TOOL}


class _Foreign:
    """The stretches of each user turn among ``texts`` that are not the user's own
    typed words (recap.core.memories.channels.foreign_spans), read once a text."""

    def __init__(self, texts: Sequence[str], roles: Sequence[str]) -> None:
        self.texts, self.roles = texts, roles
        self.spans: dict[int, list[tuple[int, int, str]]] = {}

    def origin(self, kept: Kept, origin: Origin) -> Origin:
        """``origin``, or the foreign channel ``kept``'s words were cut from."""
        i = kept.source
        if (i is None or i >= len(self.roles) or self.roles[i] != "user"
                or origin not in (Origin.USER, Origin.SUMMARY)):
            return origin
        if i not in self.spans:
            self.spans[i] = foreign_spans(normalized(self.texts[i]))
        lo, hi = kept.stretch
        worst = max((CHANNELS.index(kind) for start, end, kind in self.spans[i]
                     if start < hi and lo < end), default=0)
        return _CHANNEL_ORIGINS.get(CHANNELS[worst], origin)


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
