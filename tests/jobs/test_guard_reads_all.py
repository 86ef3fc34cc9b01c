"""The retention guard reads every stored line of what it deletes: a specific in
the middle of a long document (whose stored rendering keeps only its ends), or of
a tool result the assistant then used, is required like any other, so it is kept
in the summary (or the message stays) rather than deleted unread. One a tool
returned that nothing used stays in the archive, where recall finds it. Real
worker, PostgreSQL, the real SDK against the local Messages API server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select

from recap.api.ingest import add_message
from recap.db import transaction
from recap.models import ArchivedMessage
from recap.testing import FakeAnthropic, ok
from tests.helpers import LOW, message_ids, run_and_wait, runs, session_row, statuses

FILLER = " ".join(["the shipment record lists nothing unusual here"] * 60)  # ~2,900 chars


def middle(specific: str) -> str:
    return f"{FILLER}\nNote: {specific} is the one to keep.\n{FILLER}"


def conversation(sid: str, blocks: list[dict[str, Any]], *, answer: str = "") -> None:
    add_message(sid, "user", "Please look up my order status.")
    add_message(sid, "assistant", [{"type": "tool_use", "id": "toolu_1", "name": "orders",
                                    "input": {"q": "status"}}])
    add_message(sid, "user", blocks)
    if answer:
        add_message(sid, "assistant", answer)
        add_message(sid, "user", "Thanks.")
    for i in range(10):
        add_message(sid, "assistant" if i % 2 == 0 else "user", f"Turn {i} about the weather.")


@pytest.mark.usefixtures("celery_worker_thread")
@pytest.mark.parametrize("kind", ["used_tool_result", "document"])
def test_a_specific_in_the_middle_of_a_long_block_is_kept(
        kind: str, fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    # The guard reads what a fold deletes: the tool result reaches the fold whole.
    settings_env(**LOW, RECAP_RETENTION_GUARD="true", RECAP_CLEAR_TOOL_RESULTS="false")
    # The model leaves the specific out; only a guard that read it can keep it.
    fake_api.script(ok("The user asked about an order; the lookup returned a record."))
    specific = "ORD-77341"
    block: dict[str, Any] = (
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": middle(specific)}
        if kind != "document" else
        {"type": "document", "title": "order.txt",
         "source": {"type": "text", "media_type": "text/plain", "data": middle(specific)}})
    blocks = [block] if kind != "document" else [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "see the document"},
        block]
    # The assistant names what the tool returned in its next reply: used, so kept.
    conversation("mid", blocks, answer=f"Your order {specific} is on its way." if
                 kind == "used_tool_result" else "")
    ids = message_ids("mid")
    run_and_wait("mid", final={"applied", "dead"})
    assert statuses("mid") == ["applied"], runs("mid")[0].error
    row = session_row("mid")
    assert row is not None and row.rolling_summary is not None
    kept = specific in row.rolling_summary or ids[2] in message_ids("mid")
    assert kept, row.rolling_summary


@pytest.mark.usefixtures("celery_worker_thread")
def test_a_tool_results_specific_nothing_used_stays_in_the_archive(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    # The guard reads what a fold deletes: the tool result reaches the fold whole.
    settings_env(**LOW, RECAP_RETENTION_GUARD="true", RECAP_CLEAR_TOOL_RESULTS="false")
    fake_api.script(ok("The user asked about an order; the lookup returned a record."))
    specific = "ORD-77341"
    conversation("unused", [{"type": "tool_result", "tool_use_id": "toolu_1",
                             "content": middle(specific)}])
    ids = message_ids("unused")
    run_and_wait("unused", final={"applied", "dead"})
    assert statuses("unused") == ["applied"], runs("unused")[0].error
    run = runs("unused")[0]
    if ids[2] in message_ids("unused"):
        return  # the fold left the tool result in the window: nothing to check
    # Not counted as a loss: the archive holds the whole tool result.
    assert run.specifics_archived and run.specifics_missing_after == 0, run
    with transaction() as s:
        archived = s.scalar(select(ArchivedMessage.search_text).where(
            ArchivedMessage.session_id == "unused", ArchivedMessage.id == ids[2]))
    assert archived is not None and specific in archived
