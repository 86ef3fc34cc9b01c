"""Probes: where they are asked, how they are worded, and the full-history window they
are compared with (pure)."""

from __future__ import annotations

import time

import pytest

from recap.evals.facts import Planted, plant, weave
from recap.evals.probes import MIN_GAP, Probe, answerable, as_asked, plan_probes, recent_window

pytestmark = pytest.mark.unit


def filler(n: int) -> list[tuple[str, str]]:
    return [("user" if i % 2 == 0 else "assistant", f"message {i} about the rollout")
            for i in range(n)]


def test_probes_come_back_to_specifics_after_a_gap_spread_over_the_conversation() -> None:
    facts = plant(12, seed=7)
    messages = weave(filler(80), facts)
    probes = plan_probes(messages, facts, 4)
    assert len(probes) == 4
    assert len({p.fact for p in probes}) == 4
    for p in probes:
        stated = next(i for i, (_, text) in enumerate(messages, start=1)
                      if p.fact.sentence in text)
        assert p.after >= stated + MIN_GAP
        assert messages[p.after - 1][0] == "assistant" or p.after == len(messages)
        assert p.fact.expected not in p.turn  # it asks, it does not tell
    assert [p.after for p in probes] == sorted(p.after for p in probes)
    # The first and the last stated of the probed facts are among them.
    in_order = sorted(facts, key=lambda f: next(i for i, (_, t) in enumerate(messages)
                                                  if f.sentence in t))
    assert in_order[0] in {p.fact for p in probes}


def test_more_probes_than_facts_probes_each_fact_stated_early_enough_once() -> None:
    facts = plant(6, seed=3)
    messages = weave(filler(60), facts)
    probes = plan_probes(messages, facts, 50)
    assert 0 < len(probes) <= 6 and len({p.fact for p in probes}) == len(probes)
    assert plan_probes(messages, facts, 0) == []


def test_a_fact_without_a_question_or_never_stated_is_not_probed() -> None:
    facts = [Planted("given", "", "INV-1002", None), Planted("given", "", "ZX-9", "Which code?")]
    messages = [("user", "invoice INV-1002 please"), *filler(30)]
    assert plan_probes(messages, facts, 5) == []


@pytest.mark.parametrize(("question", "asked"), [
    ("What is the name of my dentist?", "Sorry, what was my dentist called again? "
                                        "I told you earlier."),
    ("What is my passport number?", "What was the passport number I gave you earlier?"),
    ("When is my flight to Lisbon?", "When is my flight to Lisbon again?"),
    ("What is my favourite tea?", "Remind me, what did I say my favourite tea was?"),
    ("Which invoice?", "Remind me of something I told you earlier: Which invoice?"),
])
def test_questions_are_worded_as_users_come_back_to_them(question: str, asked: str) -> None:
    assert as_asked(question) == asked


def test_the_full_history_window_keeps_the_latest_messages_that_fit() -> None:
    messages = [("user", "one two"), ("assistant", "three four five"), ("user", "six")]
    count = lambda text: len(text.split())  # noqa: E731
    assert recent_window(messages, tokens=4, count=count) == "three four five\nsix"
    assert recent_window(messages, tokens=3, count=count) == "six"
    probe = Probe(3, Planted("number", "", "TP-1357", "q"), "what was it?")
    assert answerable(probe, "booked TP-1357 yesterday") and not answerable(probe, "TP-1358")


def test_wording_is_linear_in_the_question() -> None:
    """An --expect file's question is the user's text: wording it is one pass."""
    def timed(n: int) -> float:
        question = "What is my " + "a" * n + " number?"
        started = time.perf_counter()
        for _ in range(20):
            as_asked(question)
        return time.perf_counter() - started

    timed(1000)
    assert timed(400_000) < 60 * timed(100_000) + 0.05


def test_the_eval_line_names_each_probe_the_request_could_not_answer() -> None:
    from recap.evals.main import probes_detail
    from recap.evals.run import Series

    series = Series("Recap", 8, probes=3, answerable=1, window_answerable=1,
                    window_tokens=2800, request_tokens=[2000, 2100, 2200],
                    missed=[("name", "Soren Wierzbicki"), ("number", "80239-B")])
    line = probes_detail(series)
    assert ("answerable at reference 1/3 (not in it: name 'Soren Wierzbicki', "
            "number '80239-B')") in line
    assert "not in it" not in probes_detail(Series("Recap", 8, probes=2, answerable=2))
