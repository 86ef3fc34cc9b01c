"""The retention guard reads every stored line of what it deletes: a specific in
the middle of a long tool result or document (whose stored rendering keeps only
its ends) is required like any other, so it is kept in the summary (or the
message stays) rather than deleted unread. Real worker, PostgreSQL, the real
SDK against the local Messages API server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from recap.api.ingest import add_message
from recap.testing import FakeAnthropic, ok
from tests.helpers import LOW, message_ids, run_and_wait, runs, session_row, statuses

FILLER = " ".join(["the shipment record lists nothing unusual here"] * 60)  # ~2,900 chars


def middle(specific: str) -> str:
    return f"{FILLER}\nNote: {specific} is the one to keep.\n{FILLER}"


def conversation(sid: str, blocks: list[dict[str, Any]]) -> None:
    add_message(sid, "user", "Please look up my order status.")
    add_message(sid, "assistant", [{"type": "tool_use", "id": "toolu_1", "name": "orders",
                                    "input": {"q": "status"}}])
    add_message(sid, "user", blocks)
    for i in range(10):
        add_message(sid, "assistant" if i % 2 == 0 else "user", f"Turn {i} about the weather.")


@pytest.mark.usefixtures("celery_worker_thread")
@pytest.mark.parametrize("kind", ["tool_result", "document"])
def test_a_specific_in_the_middle_of_a_long_block_is_kept(
        kind: str, fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**LOW, RECAP_RETENTION_GUARD="true")
    # The model leaves the specific out; only a guard that read it can keep it.
    fake_api.script(ok("The user asked about an order; the lookup returned a record."))
    specific = "ORD-77341"
    block: dict[str, Any] = (
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": middle(specific)}
        if kind == "tool_result" else
        {"type": "document", "title": "order.txt",
         "source": {"type": "text", "media_type": "text/plain", "data": middle(specific)}})
    blocks = [block] if kind == "tool_result" else [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "see the document"},
        block]
    conversation("mid", blocks)
    ids = message_ids("mid")
    run_and_wait("mid", final={"applied", "dead"})
    assert statuses("mid") == ["applied"], runs("mid")[0].error
    row = session_row("mid")
    assert row is not None and row.rolling_summary is not None
    kept = specific in row.rolling_summary or ids[2] in message_ids("mid")
    assert kept, row.rolling_summary
