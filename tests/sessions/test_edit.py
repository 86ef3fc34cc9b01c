"""``recap.edit_message`` on a tool result Recap cleared to a stub: the stub kept as
``build_context`` shows it keeps its original (recallable, and what a later fold
archives); an edit that would lose the original, or write a stub Recap did not,
is refused and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select

from recap import add_message, build_context, edit_message, rewind
from recap.cli import main as recap
from recap.core.context.lookback import RECALL_TAG
from recap.core.retention.stubs import STUB_OPEN, is_stub
from recap.db import transaction
from recap.errors import InvalidInput
from recap.models import ArchivedMessage, ChatMessage
from recap.testing import FakeAnthropic
from tests.helpers import assert_invariants

TASKS = 4
# No fold is due: a summarize job only clears old tool results. Replies by a model
# whose cache reads cost 0.1x its input, at which clearing these young sessions'
# logs pays (recap.core.planning.clearing).
QUIET = {"RECAP_POLICY": "threshold", "RECAP_TRIGGER_MESSAGES": 1000,
         "RECAP_TRIGGER_TOKENS": 1_000_000, "RECAP_KEEP_RECENT": 4, "RECAP_BATCH_SIZE": 40,
         "RECAP_REPLY_MODEL": "claude-sonnet-4-5"}
TYPO, FIXED = "Here is the log, plase look.", "Here is the log, please look."


def log(k: int) -> str:
    lines = [f"2026-03-1{k} worker-{k}{i:03d} request q{k}{i:05d} ok in {i} ms"
             for i in range(120)]
    lines[60] = f"2026-03-1{k} request failed with ERR-44{k}1 in src/api/handler{k}.py"
    return f"logs/api-{k}.log\n" + "\n".join(lines)


def agent_session(sid: str) -> tuple[list[int], list[int]]:
    """Tool calls and results (each result with a line of text beside it); the
    ids written and those of the results."""
    ids, results = [], []
    for k in range(TASKS):
        ids.append(add_message(sid, "user", "Please read the next log file."))
        ids.append(add_message(sid, "assistant", [{
            "type": "tool_use", "id": f"toolu_{k}", "name": "read_file",
            "input": {"path": f"logs/api-{k}.log"}}]))
        results.append(add_message(sid, "user", [
            {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": log(k)},
            {"type": "text", "text": TYPO}]))
        ids.append(results[-1])
        ids.append(add_message(sid, "assistant", "Read it; nothing stands out."))
    return ids, results


def cleared(sid: str, settings_env: Callable[..., None]) -> tuple[list[int], list[int]]:
    settings_env(**QUIET)
    ids, results = agent_session(sid)
    assert recap(["summarize", sid, "--now"]) == 0
    assert is_stub(shown(sid, results[0])[0]["content"])
    return ids, results


def shown(sid: str, message_id: int) -> list[dict[str, Any]]:
    """The message's content as the context shows it (what an app edits from)."""
    with transaction() as s:
        blocks = s.scalar(select(ChatMessage.blocks).where(ChatMessage.id == message_id))
    assert blocks is not None
    context = [m["content"] for m in build_context(sid, system_prompt="")["messages"]]
    assert any(isinstance(c, list) and blocks[0] in c for c in context)
    return [dict(b) for b in blocks]


def archived(sid: str) -> dict[int, str]:
    with transaction() as s:
        return {i: t or "" for i, t in s.execute(
            select(ArchivedMessage.id, ArchivedMessage.search_text)
            .where(ArchivedMessage.session_id == sid))}


def recalled(sid: str, question: str, ids: list[int]) -> str:
    """What the context recalls for ``question``, asked as a new turn (its id
    appended to ``ids``)."""
    ids.append(add_message(sid, "user", question))
    last = build_context(sid, system_prompt="")["messages"][-1]["content"]
    return "\n".join(b["text"] for b in last if isinstance(b, dict)
                     and b.get("text", "").startswith(f"<{RECALL_TAG}>"))


def test_an_edit_that_keeps_a_stub_as_it_reads_keeps_its_original(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    sid = "edit-keeps-stub"
    ids, results = cleared(sid, settings_env)
    content = shown(sid, results[0])
    content[1]["text"] = FIXED  # the typo beside the stub
    edit_message(sid, results[0], content)
    assert shown(sid, results[0]) == content  # the window holds the edit, stub and all
    original = archived(sid)[results[0]]
    assert "ERR-4401 in src/api/handler0.py" in original and FIXED in original
    assert STUB_OPEN not in original and TYPO not in original
    assert "ERR-4401 in src/api/handler0.py" in recalled(sid, "What caused ERR-4401?", ids)
    # A fold archives the original with the edit, not the stub.
    settings_env(**{**QUIET, "RECAP_TRIGGER_MESSAGES": 10, "RECAP_TRIGGER_TOKENS": 100})
    assert recap(["summarize", sid, "--force"]) == 0
    with transaction() as s:
        assert s.scalar(select(ChatMessage.id).where(ChatMessage.id == results[0])) is None
    folded = archived(sid)[results[0]]
    assert folded == original
    assert "ERR-4401 in src/api/handler0.py" in recalled(sid, "And src/api/handler0.py?", ids)
    assert_invariants({sid: ids})


def test_an_edit_that_would_lose_a_stubs_original_is_refused(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    sid = "edit-drops-stub"
    _, results = cleared(sid, settings_env)
    before, held = shown(sid, results[0]), archived(sid)
    changed = [{**before[0], "content": before[0]["content"] + " (seen)"}, before[1]]
    for content in (changed, [before[1]], "just a note"):
        with pytest.raises(InvalidInput, match="'toolu_0' was cleared to a stub and its "
                                               "full text is kept only in the archive"):
            edit_message(sid, results[0], content)
        assert shown(sid, results[0]) == before and archived(sid) == held
    # Given back whole, the original is in the window again: no copy is needed.
    whole = [{**before[0], "content": log(0)}, {"type": "text", "text": FIXED}]
    edit_message(sid, results[0], whole)
    assert shown(sid, results[0]) == whole and results[0] not in archived(sid)


def test_an_edit_cannot_write_a_stub_recap_did_not(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    sid = "edit-forges-stub"
    _, results = cleared(sid, settings_env)
    stub = shown(sid, results[0])[0]["content"]
    newest = shown(sid, results[-1])  # in the keep window: never cleared
    assert not is_stub(newest[0]["content"])
    forged = [{**newest[0], "content": stub}, newest[1]]
    with pytest.raises(InvalidInput, match="'toolu_3' reads as a stub Recap writes"):
        edit_message(sid, results[-1], forged)
    # Nor copied into another cleared message, beside its own stub.
    other = shown(sid, results[1])
    with pytest.raises(InvalidInput, match="'toolu_0' reads as a stub Recap writes"):
        edit_message(sid, results[1], [other[0], {**other[0], "tool_use_id": "toolu_0",
                                                  "content": stub}, other[1]])
    assert shown(sid, results[-1]) == newest and shown(sid, results[1]) == other
    assert set(archived(sid)) == set(results[:-1])


def test_a_rewind_into_the_window_keeps_the_originals_of_the_stubs_it_keeps(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    sid = "edit-rewind-stub"
    ids, results = cleared(sid, settings_env)
    rewind(sid, results[1])
    kept = [i for i in ids if i <= results[1]]
    assert set(archived(sid)) == set(results[:2])
    assert "ERR-4401 in src/api/handler0.py" in recalled(sid, "What caused ERR-4401?", kept)
    assert_invariants({sid: kept})
