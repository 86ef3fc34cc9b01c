"""recap eval's runners, without the services (pure parts)."""

from __future__ import annotations

from typing import Any

import pytest

from recap.evals.facts import plant
from recap.evals.run import context_text, run_peer

pytestmark = pytest.mark.unit


def test_a_peer_that_is_not_installed_is_reported_not_raised() -> None:
    def runner(*args: Any, **kwargs: Any) -> Any:
        raise ModuleNotFoundError("No module named 'langmem'", name="langmem")

    series = run_peer("langmem", runner, [("user", "hi")], plant(2), base_url=None)
    assert series.error == "not installed (langmem): pip install 'recap-worker[bench]'"
    assert series.total == 2 and series.after_fold == []


def test_context_text_reads_both_shapes_and_every_block() -> None:
    ctx = {"system": [{"type": "text", "text": "S"}], "messages": [
        {"role": "user", "content": "plain"},
        {"role": "assistant", "content": [{"type": "text", "text": "T"},
                                          {"type": "tool_use", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [{"type": "tool_result", "content": "R"}]}]}
    text = context_text(ctx)
    assert all(part in text for part in ("S", "plain", "T", "Oslo", "R"))


def test_the_reader_reads_blocks_appended_to_the_question_turn() -> None:
    """Recap appends its memories and recalled lines to the newest user turn, after
    the question: the stand-in reader reads them as context, not as the question."""
    from recap.evals.run import QA_PREFIX, QA_SUFFIX
    from recap.evals.standin import qa_route
    from recap.testing.replies import Request

    question = QA_PREFIX + "What is the name of my manager?" + QA_SUFFIX
    memories = "<MEMORIES>\n- The user said: my manager is called Tomasz Solberg.\n</MEMORIES>"
    body = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": [
        {"type": "text", "text": question}, {"type": "text", "text": memories}]}]}
    reply = qa_route(Request(body=body, raw=b"", headers={}))
    assert reply is not None and reply.text is not None and "Tomasz Solberg" in reply.text
