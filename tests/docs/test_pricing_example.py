"""docs/operations/prices.md's worked example of a fold priced against a warm cache: its
figures are the pricing function's own for the example's inputs and prices."""

from __future__ import annotations

from typing import Any

import pytest

from recap.core.planning.prices import prices_for, with_read
from recap.core.planning.pricing import choose
from tests.docs.blocks import ROOT

pytestmark = pytest.mark.unit

# The example's models: replies by a Sonnet, summarized by a Haiku.
PRICES = prices_for("claude-sonnet-4-5", "claude-haiku-4-5")


def row(text: str, label: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith(f"| {label}"))
    return [cell.strip() for cell in line.strip("|").split("|")[1:]]


def figure(cell: str) -> float:
    return float(cell.replace(",", ""))


def test_the_worked_example_adds_up() -> None:
    text = (ROOT / "docs" / "operations" / "prices.md").read_text()
    assert "replies by `claude-sonnet-4-5` ($3 input,\n$0.30 cache read, $3.75" in text
    assert (PRICES.reply.input, PRICES.reply.cache_read, PRICES.reply.cache_write_5m,
            PRICES.summarizer.input, PRICES.summarizer.output) == (3, 0.30, 3.75, 1, 5)
    replies = row(text, "replies so far")
    batch, summary = row(text, "batch the fold reads"), row(text, "previous summary")
    after = row(text, "prompt after the fold")
    for i in range(2):
        inputs: dict[str, Any] = {"batch_tokens": int(figure(batch[i])),
                  "summary_tokens": int(figure(summary[i])),
                  "rewritten_tokens": int(figure(after[i])),
                  "replies_so_far": int(figure(replies[i]))}
        c = choose(**inputs, prices=PRICES)
        assert c.remaining_replies == figure(replies[i])
        sent = (inputs["batch_tokens"] + inputs["summary_tokens"] + 500) / 3 * 1.2
        answer = (inputs["summary_tokens"] + inputs["batch_tokens"] * 0.2) * 5 / 3 * 1.2
        assert sent == pytest.approx(figure(row(text, "fold input")[i]))
        assert answer == pytest.approx(figure(row(text, "fold answer")[i]))
        assert c.fold.call == pytest.approx(figure(row(text, "fold call")[i]))
        assert c.fold.write == pytest.approx(figure(row(text, "cache write")[i]))
        assert c.fold.saved == pytest.approx(figure(row(text, "cache reads saved")[i]))
        assert c.fold.net == pytest.approx(figure(row(text, "saved less call and write")[i]))
        assert c.action == row(text, "decision")[i]
        assert figure(row(text, "tokens removed")[i]) * 0.1 * c.remaining_replies == (
            pytest.approx(c.fold.saved))
        assert choose(**inputs, prices=with_read(PRICES, 0.025)).action == row(
            text, "decision with cache reads at 0.025x")[i]
    agent: dict[str, Any] = {"batch_tokens": 30_000, "summary_tokens": 600,
                             "rewritten_tokens": 3100}
    reason = choose(**agent, replies_so_far=10, prices=PRICES).reason
    assert f"...; past it, {reason}`" in text.replace("\n", " ")
    assert [choose(**agent, replies_so_far=n, prices=PRICES).action
            for n in (12, 13)] == ["wait", "fold"]
    chat: dict[str, Any] = {"batch_tokens": 3500, "summary_tokens": 600, "rewritten_tokens": 2000,
            "replies_so_far": 40}
    own = choose(**chat, prices=prices_for("claude-sonnet-4-5", "claude-sonnet-4-5"))
    assert own.action == "wait" and "(13,320)" in text
    assert own.fold.call == pytest.approx(13_320)
