"""The retention guard: nothing is deleted until its specifics are kept (pure).

**The invariant.** A specific that was kept once (in the summary, its details
section, a live memory or a message held back in the window) stays kept until
the user deletes it (forget, rewind, edit). Folds keep it (below), and so do
supersedes: a memory is superseded only by one that keeps all of its specifics
(recap.core.memories.facts.may_replace). tests/core/retention/test_guard_folds.py checks it
across random fold sequences with a weak model (copies, echoes, junk replaces).

A fold must keep every specific (recap.core.specifics) of the messages it
condenses and of the previous summary, and every name (a person, a place, an
organisation: recap.core.memories.provenance.names) the user wrote in their own
words or the previous summary holds (:func:`of_turn`, :func:`of_summary`), except
a specific only a tool returned that nothing used: its message stays in the
archive, so it is neither required nor lost (recap.core.retention.salience,
:func:`kept_of`). The details section holds the best-ranked lines that fit under
a header per origin (recap.core.retention.details); the others become memories
labelled by the text they were read from (recap.core.retention.kept). *Kept*
means present in the new summary or in the facts mined from this batch. The job
asks the model once to repair a summary that omits some
(recap.core.retention.repairs.repair_prompt); what is still missing is then
settled by :func:`settle`, in this order:

1. Batch specifics, unit by unit (a unit is policy's: an assistant turn and its
   tool results, which leave a batch whole), oldest first: into Recap's own
   *details* section (a line each, with a few words of context), while it stays
   within its cap. A unit whose lines do not fit **stays in the window** with
   every unit after it: the batch becomes the prefix before it, so a run still
   condenses a contiguous stretch of ids (pinned messages aside) and the
   audit's first..last range covers exactly what it condensed. Three exceptions
   send the lines that do not fit to memories instead: the first unit of the
   batch (so every job condenses something), a unit held back once already
   (``held_before``: a message is held at most once, so a session never spends
   call after call on the same overflow) and a fold that ``spills`` (aggressive
   mode: the context is nearly full and holding back would not help; and the
   adaptive policy, whose window is a few messages and whose memories block is
   sized to carry what the window does not: a message held back there would
   cost a rewrite of the cached prompt for a fold that condenses next to nothing).
2. Specifics of the previous summary, in order of appearance: into the details
   section while it fits, else to memories.

A memory made here is an ordinary fact (category ``fact``) whose text carries
the specific with its context. The details section is always rebuilt by Recap:
a section the model copied from the previous summary is cut off first
(:func:`strip_details`), so the cap holds across folds.

An entry (a details line, a guard-made memory) is ``specific: context`` and never
deeper: its context comes from the condensed message's own text, a line the
previous details section already holds is carried as it is (:func:`tidy`), and
a context that starts with an entry's prefix or a bullet loses it (:func:`peel`),
so folds never stack ``X: - X: - X:`` prefixes. An entry is at most
:data:`MAX_ENTRY_CHARS` long. Sentences that echo what Recap itself sent (the
prompt, the tool schema) are cut from the summary and are never specifics
(recap.core.prompts.echo).
"""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from recap.core.memories.facts import Fact
from recap.core.memories.provenance import names, stated_names
from recap.core.prompts.echo import strip_echo
from recap.core.prompts.summarize import Turn
from recap.core.retention.details import (
    DETAILS_HEADER,
    DETAILS_HEADERS,
    details_lines,
    details_sections,
    render_details,
    strip_details,
)
from recap.core.retention.entries import (
    CONTEXT_WORDS,
    MAX_ENTRY_CHARS,
    bounded,
    context,
    contexts,
    entry,
    peel,
    tidy,
)
from recap.core.retention.kept import (
    IMPORTANCE,
    MEMORY_SOURCE,
    Line,
    by_rank,
    lines_for,
    rank_counts,
)
from recap.core.retention.salience import Origin, Salience, Voice, rank
from recap.core.specifics import Needles, absent, extract_specifics, joined, search_key

__all__ = ["CONTEXT_WORDS", "DETAILS_HEADER", "DETAILS_HEADERS", "MAX_ENTRY_CHARS", "Settlement",
           "context", "default_salience", "details_sections", "kept_of", "render_details",
           "details_lines", "entry", "missing", "peel", "repair_items",
           "required", "settle", "strip_details", "tidy"]

TOOL_RESULT_RENDERING = "[tool result for "  # how recap.core.content.render writes one


@dataclass(frozen=True)
class Settlement:
    """What a guarded apply writes: the summary with its details section, the ids it
    condenses (a prefix of the batch), those it holds back, and guard-made memories."""

    summary: str
    condensed_ids: tuple[int, ...]
    held_ids: tuple[int, ...]
    memories: tuple[Fact, ...]
    specifics_total: int
    specifics_in_details: int
    specifics_to_memories: int
    # The condensed messages' specifics by Rank, and those left in the archive only.
    by_rank: tuple[int, int, int, int] = (0, 0, 0, 0)
    archived: int = 0


@dataclass(frozen=True)
class GuardCounts:
    """What the guard did on one fold: its summary_runs columns."""

    specifics_total: int
    specifics_missing_before_repair: int
    specifics_missing_after: int
    specifics_in_details: int
    specifics_to_memories: int
    messages_held_back: int
    repaired: bool
    repair_input_tokens: int = 0
    repair_output_tokens: int = 0
    repair_skipped: bool = False
    specifics_stated: int = 0
    specifics_referred: int = 0
    specifics_used: int = 0
    specifics_rest: int = 0
    specifics_archived: int = 0


def of_turn(turn: Turn) -> frozenset[str]:
    """What a fold must keep of ``turn``: its specifics (recap.core.specifics) and, for
    a user's turn, each name they wrote themselves (a person, a place, an
    organisation: recap.core.memories.provenance.names, outside what they quote or paste)."""
    found = extract_specifics(turn.content)
    return found | joined(stated_names(turn.content), found) if turn.role == "user" else found


def of_summary(summary: str | None) -> frozenset[str]:
    """What a fold must keep of the previous summary: its specifics and its names (a
    name kept once stays kept)."""
    text = summary or ""
    # A details line's head is its specific (a name there starts no sentence).
    heads = {h for h in (line.partition(": ")[0] for line in details_lines(text))
             if names(f"x {h}") == {h}}
    return (extract_specifics(text, whole=True) | names(strip_details(text))
            | names("\n".join(details_lines(text))) | heads)


def required(turns: Sequence[Turn], previous: str | None,
             salience: Salience | None = None) -> frozenset[str]:
    """The specifics a fold of ``turns`` onto ``previous`` must keep (pass the
    previous summary without its echoes of Recap's prompt: recap.core.prompts.echo). With
    ``salience``, not those of the batch it finds :meth:`~Salience.archivable`
    (a tool returned them and nothing used them: they stay in the archive)."""
    found: set[str] = set(of_summary(previous))
    for t in turns:
        found |= kept_of(t, salience)
    return frozenset(found)


def kept_of(turn: Turn, salience: Salience | None) -> frozenset[str]:
    """:func:`of_turn` without what ``salience`` leaves in the archive."""
    found = of_turn(turn)
    if salience is None:
        return found
    return frozenset(s for s in found if not salience.archivable(s))


def default_salience(turns: Sequence[Turn]) -> Salience:
    """The salience of ``turns`` read from their text alone (no later messages, a
    turn rendered as tool results is a tool result), leaving nothing to an archive
    it does not know of: what :func:`settle` uses when the job gives none."""
    return dataclasses.replace(
        rank([Voice(t.id, t.role, t.content, tool=t.content.startswith(TOOL_RESULT_RENDERING))
              for t in turns]), archive=False)


def missing(specifics: frozenset[str], *, summary: str,
            facts: Sequence[Fact] = ()) -> frozenset[str]:
    """The ``specifics`` present neither in ``summary`` nor in ``facts``."""
    return absent(specifics, [summary, *(f.fact for f in facts)])


def repair_items(turns: Sequence[Turn], previous: str | None,
                 lost: frozenset[str], *, limit: int | None = None) -> list[str]:
    """Entry lines for the ``lost`` specifics (the first ``limit`` of them in order,
    all by default), each from the text it first appears in, each text read once
    for all of them."""
    wanted = sorted(lost)[:limit]
    sources = [of_turn(t) for t in turns]
    texts = [t.content for t in turns] + [previous or ""]
    sources.append(of_summary(previous))
    first: dict[str, int] = {}
    for i, found in enumerate(sources):
        for s in found.intersection(wanted):
            first.setdefault(s, i)
    groups: dict[int, list[str]] = {}
    for s in wanted:
        groups.setdefault(first.get(s, -1), []).append(s)
    around = {s: context("", s) for s in groups.pop(-1, [])}
    for i, group in groups.items():
        around.update(contexts(texts[i], group))
    return [bounded(s, around[s]) for s in wanted]


def settle(*, turns: Sequence[Turn], units: Sequence[Sequence[int]], previous: str | None,
           summary: str, facts: Sequence[Fact], details_cap: int,
           count: Callable[[str], int], spill: bool,
           held_before: frozenset[int] = frozenset(), corpus: str = "",
           salience: Salience | None = None) -> Settlement:
    """Settle what ``summary`` (after any repair) and ``facts`` still miss.

    ``units`` are the batch's ids grouped in policy units, oldest first;
    ``details_cap`` is the details section's most tokens (by ``count``);
    ``corpus``: what Recap sent (recap.core.prompts.echo.sent_corpus), cut from the summary;
    ``salience``: the rank and origin of the batch's specifics (recap.core.retention.salience;
    default: read from ``turns`` alone). The details section holds the best-ranked
    lines that fit, grouped by origin; the rest become memories.
    """
    sal = salience if salience is not None else default_salience(turns)
    summary = strip_echo(strip_details(summary), corpus)
    kept = [summary, *(f.fact for f in facts)]
    section = _Section(room=details_cap - count(DETAILS_HEADER), count=count)
    walk = _walk_units(turns, units, kept=kept, sal=sal, section=section, spill=spill,
                       held_before=held_before)
    before = of_summary(previous)
    lost_before = absent(before - walk.covered, kept)
    settled = walk.covered | lost_before  # what the details and memories now carry
    section.place(_from_previous(previous, lost_before, sal), spill_over=True)
    details, memories = by_rank([*section.placed, *section.overflow], cap=details_cap,
                                count=count)
    text = summary
    if details:
        text = f"{summary}\n\n{render_details([(d.origin, d.text) for d in details])}"
    in_details = len(settled) - len(absent(settled, [d.text for d in details]))
    by_id = {t.id: t for t in turns}
    ranks, archived = rank_counts(
        frozenset().union(*(of_turn(by_id[m]) for m in walk.condensed)) - before, sal)
    return Settlement(
        summary=text, condensed_ids=tuple(walk.condensed), held_ids=tuple(walk.held),
        memories=tuple(Fact(m.text, "fact", IMPORTANCE[m.rank], source=MEMORY_SOURCE[m.origin])
                       for m in memories),
        specifics_total=len(walk.total | before),
        specifics_in_details=in_details, specifics_to_memories=len(settled) - in_details,
        by_rank=ranks, archived=archived)


@dataclass
class _Section:
    """The details section while a fold is settled: the lines placed in it, those
    that did not fit (they become memories) and the room left, in ``count``'s tokens."""

    room: int
    count: Callable[[str], int]
    placed: list[Line] = field(default_factory=list)
    overflow: list[Line] = field(default_factory=list)

    def place(self, lines: Sequence[Line], *, spill_over: bool) -> bool:
        """Put ``lines`` in the section if they all fit; else, with ``spill_over``,
        those that fit and the rest to memories; else nothing (False)."""
        costs = [self.count("\n- " + line.text) for line in lines]
        if sum(costs) <= self.room:
            self.placed.extend(lines)
            self.room -= sum(costs)
            return True
        if not spill_over:
            return False
        for line, cost in zip(lines, costs, strict=True):
            if cost <= self.room:
                self.placed.append(line)
                self.room -= cost
            else:
                self.overflow.append(line)
        return True


@dataclass(frozen=True)
class _Walk:
    """The batch's units walked: the ids condensed (a prefix of the batch), those
    held back, the specifics now carried by the section and its overflow
    (``covered``) and every specific the condensed units required (``total``)."""

    condensed: list[int]
    held: list[int]
    covered: set[str]
    total: set[str]


def _walk_units(turns: Sequence[Turn], units: Sequence[Sequence[int]], *, kept: Sequence[str],
                sal: Salience, section: _Section, spill: bool,
                held_before: frozenset[int]) -> _Walk:
    """Place each unit's lost specifics in ``section``, oldest unit first, until one
    does not fit: it and every unit after it are held back, unless it is the first,
    was held before or the fold ``spill``s (then its overflow goes to memories)."""
    by_id = {t.id: t.content for t in turns}
    roles = {t.id: t.role for t in turns}
    need = {t.id: kept_of(t, sal) for t in turns}
    covered: set[str] = set()
    total: set[str] = set()
    condensed: list[int] = []
    held: list[int] = []
    # What the batch says that ``kept`` lacks, looked up once for every unit.
    gone = absent(frozenset().union(*need.values()), kept)
    for i, unit in enumerate(units):
        found = frozenset().union(*(need[m] for m in unit))
        lost = sorted((found - covered) & gone, key=lambda x: (sal.rank(x), x))
        texts = [by_id[m] for m in unit]
        lines = lines_for(lost, texts, [need[m] for m in unit], sal, [roles[m] for m in unit])
        if not section.place(lines, spill_over=i == 0 or spill or bool(held_before & set(unit))):
            held = [m for u in units[i:] for m in u]
            break
        covered.update(lost)
        total |= found
        condensed.extend(unit)
    return _Walk(condensed=condensed, held=held, covered=covered, total=total)


def _from_previous(previous: str | None, lost: frozenset[str], sal: Salience) -> list[Line]:
    """The lines for the previous summary's ``lost`` specifics. A line the previous
    details section holds is carried as it is, under its origin: rebuilding it from
    the summary would read Recap's own line and stack its prefix again. The rest
    follow in order of appearance, each an entry of the summary's body."""
    left = set(lost)
    keys = {s: search_key(s) for s in left}
    needles = Needles(keys.values())
    carried: list[Line] = []
    for origin, line in details_sections(previous or ""):
        line = tidy(line)
        held = needles.held_by([line])
        holds = {s for s in left if not keys[s] or keys[s] in held}
        if holds:
            carried.append(Line(min(sal.rank(s) for s in holds), origin, line))
            left -= holds
    body = strip_details(previous or "")
    order = _appearance(body, frozenset(left))
    around = contexts(body, order)
    return carried + [Line(sal.rank(s), Origin.SUMMARY, bounded(s, around[s])) for s in order]


def _appearance(text: str, specifics: frozenset[str]) -> list[str]:
    """``specifics`` in the order they first appear in ``text`` (ties by name; those
    it does not hold first)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    keys = {s: s.casefold() for s in specifics}
    at = Needles(keys.values()).first(folded)
    return sorted(specifics, key=lambda s: (at.get(keys[s], -1), s))
