"""``recap.sessions.cleared.reconcile`` (pure): what an edit does to each cleared tool
result's original, paired by tool_use_id and occurrence."""

from __future__ import annotations

from typing import Any

import pytest

from recap.core.retention.stubs import stub
from recap.errors import EditDropsOriginal, ForgedStub
from recap.sessions.cleared import reconcile

pytestmark = pytest.mark.unit

BODY = "logs/api.log\n" + "\n".join(f"line {i} ERR-{i:04d}" for i in range(50))
STUB = stub(BODY, tokens=900)


def result(use: str, content: object) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use, "content": content}


NOTE = {"type": "text", "text": "see above"}


def test_a_kept_stub_gets_its_original_and_the_rest_is_the_edit() -> None:
    stored = [result("a", STUB), result("b", "short"), NOTE]
    edited = [result("a", STUB), result("b", "changed"), {"type": "text", "text": "fixed"}]
    merged = reconcile(7, stored=stored, edited=edited,
                       archived=[result("a", BODY), result("b", "short"), NOTE])
    assert merged == [result("a", BODY), result("b", "changed"),
                      {"type": "text", "text": "fixed"}]


def test_no_stub_kept_needs_no_copy() -> None:
    stored = [result("a", STUB)]
    assert reconcile(7, stored=stored, edited=[result("a", [{"type": "text", "text": BODY}])],
                     archived=[result("a", BODY)]) is None
    # A stub whose original is gone already (nothing archived) loses nothing.
    assert reconcile(7, stored=stored, edited=None, archived=None) is None


@pytest.mark.parametrize("edited", [None, [NOTE], [result("a", STUB + " x")],
                                    [result("a", "other text")],
                                    [result("a", [{"type": "image", "source": {}}])]])
def test_losing_an_original_is_refused(edited: list[dict[str, Any]] | None) -> None:
    with pytest.raises(EditDropsOriginal, match="tool_use_id 'a' was cleared"):
        reconcile(7, stored=[result("a", STUB)], edited=edited, archived=[result("a", BODY)])


def test_a_stub_the_message_does_not_hold_is_refused() -> None:
    stored = [result("a", STUB), result("a", "second result of the same id")]
    with pytest.raises(ForgedStub, match="tool_use_id 'a' reads as a stub"):
        reconcile(7, stored=stored, edited=[result("a", STUB), result("a", STUB)],
                  archived=[result("a", BODY), result("a", "second result of the same id")])
    with pytest.raises(ForgedStub, match="tool_use_id 'z'"):
        reconcile(7, stored=None, edited=[result("z", STUB)], archived=None)
