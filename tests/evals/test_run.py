"""recap eval's runners, without the services (pure parts)."""

from __future__ import annotations

from typing import Any

from recap.evals.facts import plant
from recap.evals.run import context_text, run_peer


def test_a_peer_that_is_not_installed_is_reported_not_raised() -> None:
    def runner(*args: Any, **kwargs: Any) -> Any:
        raise ModuleNotFoundError("No module named 'langmem'", name="langmem")

    series = run_peer("langmem", runner, [("user", "hi")], plant(2), base_url=None)
    assert series.error == "not installed (langmem): pip install -e '.[bench]'"
    assert series.total == 2 and series.after_fold == []


def test_context_text_reads_both_shapes_and_every_block() -> None:
    ctx = {"system": [{"type": "text", "text": "S"}], "messages": [
        {"role": "user", "content": "plain"},
        {"role": "assistant", "content": [{"type": "text", "text": "T"},
                                          {"type": "tool_use", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [{"type": "tool_result", "content": "R"}]}]}
    text = context_text(ctx)
    assert all(part in text for part in ("S", "plain", "T", "Oslo", "R"))
