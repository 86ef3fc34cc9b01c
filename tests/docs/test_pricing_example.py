"""docs/operations/prices.md's worked example of a fold priced against a warm cache: its
figures are the pricing function's own for the example's inputs."""

from __future__ import annotations

import pytest

from recap.core.planning.pricing import choose
from tests.docs.blocks import ROOT

pytestmark = pytest.mark.unit


def row(text: str, label: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith(f"| {label}"))
    return [cell.strip() for cell in line.strip("|").split("|")[1:]]


def figure(cell: str) -> float:
    return float(cell.replace(",", ""))


def test_the_worked_example_adds_up() -> None:
    text = (ROOT / "docs" / "operations" / "prices.md").read_text()
    replies = row(text, "replies so far")
    batch, summary = row(text, "batch the fold reads"), row(text, "previous summary")
    after = row(text, "prompt after the fold")
    for i in range(2):
        c = choose(batch_tokens=int(figure(batch[i])), summary_tokens=int(figure(summary[i])),
                   rewritten_tokens=int(figure(after[i])), replies_so_far=int(figure(replies[i])))
        assert c.remaining_replies == figure(replies[i])
        assert c.fold.call == pytest.approx(figure(row(text, "fold call")[i]))
        assert c.fold.write == pytest.approx(figure(row(text, "cache write")[i]))
        assert c.fold.saved == pytest.approx(figure(row(text, "cache reads saved")[i]))
        assert c.fold.net == pytest.approx(figure(row(text, "saved less call and write")[i]))
        assert c.action == row(text, "decision")[i]
        assert figure(row(text, "tokens removed")[i]) * 0.1 * c.remaining_replies == (
            pytest.approx(c.fold.saved))
    agent = choose(batch_tokens=30_000, summary_tokens=600, rewritten_tokens=3100,
                   replies_so_far=10)
    assert f"...; past it, {agent.reason}`" in text.replace("\n", " ")
    assert [choose(batch_tokens=30_000, summary_tokens=600, rewritten_tokens=3100,
                   replies_so_far=n).action for n in (17, 18)] == ["wait", "fold"]
