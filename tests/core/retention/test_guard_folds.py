"""The retention guard across many folds (hypothesis): entries never stack prefixes,
and a specific kept once stays kept (summary, details, a live memory or the window)
until the user deletes it, whatever the model answers, copies, echoes or replaces."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recap.core.memories.facts import Fact, may_replace
from recap.core.prompts.echo import sent_corpus, strip_echo
from recap.core.prompts.summarize import Turn
from recap.core.retention import guard
from recap.core.retention.entries import MAX_ENTRY_CHARS, is_prefix, peel, restates
from recap.core.specifics import absent, extract_specifics

SENT = ("The updated summary text, at most 1024 tokens.",
        "Answer with the title only: 3 to 7 words, in the same language as the conversation.")
CORPUS = sent_corpus(SENT)

codes = st.from_regex(r"[A-Z]{2}[0-9]{3,5}", fullmatch=True)
amounts = st.builds(lambda a, b: f"${a}.{b:02d}", st.integers(1, 999), st.integers(0, 99))
dates = st.builds(lambda d, m, y: f"{d} {m} {y}", st.integers(1, 28),
                  st.sampled_from(["March", "April", "May"]), st.integers(2020, 2030))
specific = st.one_of(codes, amounts, dates)
templates = st.sampled_from([
    "I'm flying with TAP, flight {s}, on the early train after the meeting.",
    "- {s}: Also, I was charged {s} for the late checkout at the hotel.",
    "Note that {s} is the tracking number of the parcel sent to Lisbon.",
    "{s}: the reference the support agent gave me on the phone yesterday.",
    "Please remember {s} and {s} when you write the report.",
])
message = st.builds(lambda t, s: t.format(s=s), templates, specific)


@dataclass
class Model:
    """A weak model's choices for one fold, drawn by hypothesis."""

    keep: list[bool]  # per sentence of previous summary + batch: copied or not
    copy_details: int  # 0: no, 1: lines without the header, 2: with the header
    echo: bool
    facts: list[int]  # indexes of batch messages mined as facts
    junk_replaces: list[int]  # indexes of live memories a junk fact "replaces"


@dataclass
class World:
    window: list[tuple[int, str]] = field(default_factory=list)
    summary: str | None = None
    memories: dict[int, str] = field(default_factory=dict)
    live: set[int] = field(default_factory=set)
    held: frozenset[int] = frozenset()
    next_id: int = 1

    def kept(self) -> str:
        return "\n".join([self.summary or "", *(self.memories[i] for i in self.live),
                          *(t for _, t in self.window)])

    def remember(self, fact: Fact) -> None:
        found = next((i for i, t in self.memories.items() if t == fact.fact), None)
        new = found if found is not None else max(self.memories, default=0) + 1
        self.memories[new] = fact.fact
        self.live.add(new)
        if fact.replaces is not None and fact.replaces != new and fact.replaces in self.live \
                and may_replace(self.memories[fact.replaces], fact.fact):
            self.live.discard(fact.replaces)


def answer(model: Model, previous: str | None, batch: list[tuple[int, str]],
           live: list[int]) -> tuple[str, list[Fact]]:
    sentences = [*guard.strip_details(previous or "").split("\n"), *(t for _, t in batch)]
    picked = [s for s, k in zip(sentences, model.keep, strict=False) if k and s.strip()]
    if model.copy_details:
        lines = [f"- {d}" for d in guard.details_lines(previous or "")]
        picked += ([guard.DETAILS_HEADER] if model.copy_details == 2 else []) + lines
    if model.echo:
        picked.append(SENT[0])
    facts = [Fact(batch[i % len(batch)][1], "fact", 3) for i in model.facts] if batch else []
    facts += [Fact("The user said something.", "fact", 3, live[i % len(live)])
              for i in model.junk_replaces if live]
    return "\n".join(picked) or "The conversation went on.", facts


def fold(world: World, model: Model, *, take: int, cap: int,
         aggressive: bool) -> tuple[set[str], guard.Settlement]:
    """One fold of the oldest ``take`` window messages: the specifics it had to keep,
    and the guard's settlement."""
    batch = world.window[:take]
    previous = strip_echo(world.summary or "", CORPUS) or None
    turns = [Turn(i, "user", t) for i, t in batch]
    needed = set(guard.required(turns, previous))
    summary, facts = answer(model, previous, batch, sorted(world.live))
    settled = guard.settle(turns=turns, units=[[i] for i, _ in batch], previous=previous,
                           summary=strip_echo(summary, CORPUS), facts=facts, details_cap=cap,
                           count=lambda t: len(t) // 4, spill=aggressive,
                           held_before=world.held, corpus=CORPUS)
    world.summary = settled.summary
    for f in [*facts, *settled.memories]:
        world.remember(f)
    done = set(settled.condensed_ids)
    world.window = [m for m in world.window if m[0] not in done]
    world.held = frozenset(settled.held_ids)
    return needed, settled


def one_prefix_deep(line: str) -> bool:
    head, sep, rest = line.partition(": ")
    if not sep or not is_prefix(head):
        return peel(line) == line.strip()
    return peel(rest) == rest.strip()


models = st.builds(Model, st.lists(st.booleans(), max_size=30), st.integers(0, 2),
                   st.booleans(), st.lists(st.integers(0, 20), max_size=3),
                   st.lists(st.integers(0, 20), max_size=2))
folds = st.lists(st.tuples(st.lists(message, min_size=1, max_size=4), models,
                           st.integers(1, 5), st.integers(8, 120), st.booleans()),
                 min_size=1, max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(folds)
def test_entries_stay_one_prefix_deep_and_bounded(steps) -> None:
    world = World()
    for arrivals, model, take, cap, aggressive in steps:
        for text in arrivals:
            world.window.append((world.next_id, text))
            world.next_id += 1
        _, settled = fold(world, model, take=take, cap=cap, aggressive=aggressive)
        for line in [*guard.details_lines(settled.summary), *(m.fact for m in settled.memories)]:
            assert one_prefix_deep(line), line
            assert len(line) <= MAX_ENTRY_CHARS, line
        assert "1024" not in extract_specifics(world.summary or "", whole=True)


@pytest.mark.unit
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(folds)
def test_a_specific_kept_once_stays_kept(steps) -> None:
    world = World()
    ever: set[str] = set()
    for arrivals, model, take, cap, aggressive in steps:
        for text in arrivals:
            world.window.append((world.next_id, text))
            world.next_id += 1
            ever |= extract_specifics(text)
        ever |= fold(world, model, take=take, cap=cap, aggressive=aggressive)[0]
        assert absent(ever, [world.kept()]) == frozenset()


@pytest.mark.unit
def test_a_details_line_is_carried_as_it_is_and_never_stacks() -> None:
    line = "TP1357: I'm flying with TAP, flight TP1357, on the early train"
    previous = f"The user travels.\n\n{guard.DETAILS_HEADER}\n- {line}"
    settled = guard.settle(turns=[], units=[], previous=previous, summary="They travel.",
                           facts=[], details_cap=500, count=len, spill=False)
    assert guard.details_lines(settled.summary) == [line]
    # An older, stacked line is mended to one prefix.
    stacked = "TP1357: - TP1357: - TP1357: I'm flying with TAP, flight TP1357,"
    assert guard.tidy(stacked) == "TP1357: I'm flying with TAP, flight TP1357,"
    assert guard.entry("- $89.99: Also, I was charged $89.99 for it", "$89.99") == \
        "$89.99: Also, I was charged $89.99 for it"


@pytest.mark.unit
def test_a_replacement_that_drops_a_specific_does_not_supersede() -> None:
    assert not may_replace("Tracking number 1Z999AA10123456784 for the parcel",
                           "The user said something.")
    assert may_replace("The user lives in Lisbon.", "The user moved to Porto.")
    assert may_replace("Flight TP1357 on 3 March 2025", "Flight TP1357 moved from 3 March 2025")


person_place_or_org = st.sampled_from(["Ines", "Porto", "TAP", "Mallory", "Lufthansa", "Kyoto",
                                       "Ana Costa", "Deutsche Bahn"])
crowded = st.builds(
    lambda t, n, a, b, c: t.format(n=n, a=a, b=b, c=c),
    st.sampled_from([
        "I'm flying with {n}, flight {a}, and my booking code is {b}.",
        "My sister {n} paid {a} on {c} for order {b}.",
        "Send it to {n} by {c}, reference {a}, invoice {b}.",
        "Tell {n} that {a}, {b} and {c} are all confirmed for the trip to Kyoto.",
    ]), person_place_or_org, codes, st.one_of(codes, amounts), st.one_of(dates, amounts))


@pytest.mark.unit
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.lists(crowded, min_size=1, max_size=4), st.integers(1, 5),
                          st.integers(8, 120), st.booleans()), min_size=1, max_size=6))
def test_every_specific_and_name_of_a_crowded_sentence_is_kept(steps) -> None:
    # A model that mentions no specific: each fold's summary is one plain sentence.
    world = World()
    stated: set[str] = set()
    for arrivals, take, cap, aggressive in steps:
        for text in arrivals:
            world.window.append((world.next_id, text))
            world.next_id += 1
            stated |= guard.of_turn(Turn(0, "user", text))
        fold(world, Model([], 0, False, [], []), take=take, cap=cap, aggressive=aggressive)
        assert absent(stated, [world.kept()]) == frozenset()
    assert {"TP1357", "QX7K2P", "TAP"} <= guard.of_turn(Turn(0, "user", (
        "I'm flying with TAP, flight TP1357, and my booking code is QX7K2P.")))


@pytest.mark.unit
def test_a_fact_that_copies_recaps_own_lines_back_is_no_new_memory() -> None:
    kept = ["QX7K2P: I'm flying with TAP, flight TP1357, and my booking code is QX7K2P."]
    assert restates("QX7K2P: TAP, flight TP1357, and my booking code is QX7K2P.", [])
    assert restates("I'm flying with TAP, flight TP1357, and my booking code is QX7K2P.", kept)
    assert restates("- The user flies TAP.", [])
    assert not restates("The user flies with TAP on flight TP1357.", kept)
