"""Salience: which specifics of a fold the conversation showed it needs (pure).

The retention guard keeps the specifics of what a fold condenses
(recap.core.retention.guard). Not all of them matter alike: a tool that lists a file
returns hundreds of numbers, and the one the conversation needs is the one
somebody named. :func:`rank` orders every specific of the condensed messages
by the evidence the conversation gives, best first:

1. ``STATED``: the user stated it in their own words (recap.core.memories.provenance:
   not what they quote or paste, not a tool result).
2. ``REFERRED``: someone named it again later: the user in their own words, or
   the assistant in its text or a tool call's input, in a message after the one
   it first appeared in (in the condensed messages or in those after them).
3. ``USED``: the assistant named it right after a tool returned it: in the text
   or the tool call input of its first message after that tool result.
4. ``REST``: nothing used it.

Each specific also has an :class:`Origin`: who first said it in the condensed
messages (the user, a document or text the user pasted, the assistant, a tool).
A ``REST`` specific whose origin is a tool result is :func:`archivable`: the
condensed message stays in the archive (RECAP_ARCHIVE_SUMMARIZED), where reply-time
recall finds it when a later turn names it, so the guard does not count it as a loss.

Specifics are compared by their canonical form (recap.core.specifics.canonical):
every message is read once into a set, and the ranking is a pass over those
sets, linear in the text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import NamedTuple

from recap.core.memories.channels import typed_words
from recap.core.memories.provenance import stated_names, strip_pasted
from recap.core.specifics import canonical, extract_specifics


class Rank(IntEnum):
    """How much evidence says a specific matters: lower is stronger."""

    STATED = 0
    REFERRED = 1
    USED = 2
    REST = 3


class Origin(StrEnum):
    """Who first said a specific in the condensed messages (``summary``: the
    previous summary, kept by an earlier fold)."""

    USER = "user"
    DOCUMENT = "document"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SUMMARY = "summary"


@dataclass(frozen=True)
class Voice:
    """One message as salience reads it: ``role`` (user, assistant, tool), its whole
    ``content`` (blocks rendered in full), ``own``: for a user turn, what the user
    typed themselves (recap.core.memories.provenance.own_text; for a plain string turn,
    None reads it from ``content``), and ``tool``: a turn of tool results."""

    id: int
    role: str
    content: str
    own: str | None = None
    tool: bool = False

    @property
    def is_tool_result(self) -> bool:
        return self.tool or self.role == "tool"


class Voices(NamedTuple):
    """The messages a fold condenses (``batch``) and those after them (``later``)."""

    batch: tuple[Voice, ...] = ()
    later: tuple[Voice, ...] = ()


def key(specific: str) -> str:
    """The form specifics are compared in (case and width folded, white space
    ignored, as recap.core.specifics.contains compares them)."""
    return canonical(specific).replace(" ", "")


def _keys(found: Iterable[str]) -> set[str]:
    return {key(s) for s in found}


@dataclass(frozen=True)
class Salience:
    """The rank and origin of each specific of a fold (by :func:`key`)."""

    ranks: dict[str, Rank] = field(default_factory=dict)
    origins: dict[str, Origin] = field(default_factory=dict)
    # Whether the condensed messages stay in the archive (RECAP_ARCHIVE_SUMMARIZED):
    # without it nothing is archivable, and the guard keeps every specific.
    archive: bool = True

    def rank(self, specific: str) -> Rank:
        """``specific``'s rank; REST when nothing is known of it."""
        return self.ranks.get(key(specific), Rank.REST)

    def origin(self, specific: str) -> Origin:
        """Who first said ``specific``; SUMMARY when no condensed message did."""
        return self.origins.get(key(specific), Origin.SUMMARY)

    def archivable(self, specific: str) -> bool:
        """Whether ``specific`` may stay in the archive only: a tool returned it and
        nothing used it (:class:`Rank` REST)."""
        return (self.archive and self.rank(specific) is Rank.REST
                and self.origin(specific) is Origin.TOOL)


def spoken(voice: Voice) -> set[str]:
    """The specifics ``voice``'s author wrote themselves (keys): the user's own
    words with the names in them, the assistant's text and tool call inputs, none
    of a tool result."""
    if voice.is_tool_result:
        return set()
    if voice.role == "user":
        own = typed_words(strip_pasted(voice.content)) if voice.own is None else voice.own
        return _keys(extract_specifics(own) | stated_names(own))
    return _keys(extract_specifics(voice.content))


def heard(voice: Voice) -> set[str]:
    """Every specific of ``voice`` (keys), as the guard requires them
    (recap.core.retention.guard.of_turn): its specifics, and for a user-role turn the names
    outside what is quoted or pasted."""
    found = extract_specifics(voice.content)
    if voice.role == "user":
        found = found | stated_names(voice.content)
    return _keys(found)


def rank(condensed: Sequence[Voice], later: Sequence[Voice] = ()) -> Salience:
    """The :class:`Salience` of the specifics of ``condensed`` (the messages a fold
    condenses, oldest first), from the evidence in them and in ``later`` (the
    messages after them, oldest first)."""
    found = _Found()
    returned: set[str] = set()  # what the tool results since the last other turn held

    for i, voice in enumerate([*condensed, *later]):
        inside = i < len(condensed)
        everything = heard(voice)
        if voice.is_tool_result:
            if inside:
                for k in everything:
                    found.first(k, Origin.TOOL)
            returned |= everything
            continue
        said = spoken(voice)
        found.said(voice, said, inside=inside, returned=returned)
        if inside:
            for k in everything - said:
                found.first(k, Origin.DOCUMENT if voice.role == "user" else Origin.ASSISTANT)
        returned = set()
    return Salience(found.ranks, found.origins)


@dataclass
class _Found:
    """The ranks and origins :func:`rank` has found so far."""

    ranks: dict[str, Rank] = field(default_factory=dict)
    origins: dict[str, Origin] = field(default_factory=dict)

    def first(self, k: str, origin: Origin, start: Rank = Rank.REST) -> None:
        """``k`` first said here, by ``origin``, ranked ``start``; nothing if it was
        said before."""
        if k not in self.origins:
            self.origins[k], self.ranks[k] = origin, start

    def said(self, voice: Voice, said: set[str], *, inside: bool,
             returned: set[str]) -> None:
        """What ``voice``'s author wrote (``said``): first said here if the fold
        condenses ``voice``, else evidence of a specific said before; ``returned``:
        what the tool results right before ``voice`` held."""
        for k in said:
            if k not in self.origins:
                if inside:  # first said here
                    user = voice.role == "user"
                    self.first(k, Origin.USER if user else Origin.ASSISTANT,
                               Rank.STATED if user else Rank.REST)
                continue
            if voice.role == "user" and inside:
                now = Rank.STATED  # the user states it, whoever said it first
            elif voice.role == "assistant" and k in returned:
                now = Rank.USED
            else:
                now = Rank.REFERRED
            self.ranks[k] = min(self.ranks[k], now)
