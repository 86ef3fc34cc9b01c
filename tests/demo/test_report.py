"""The demo's report: the turn count it prints agrees with the table's message count
(the session's active messages), naming the placeholder turn Recap adds. Pure."""

from __future__ import annotations

import pytest

from recap.core.context.assemble import PLACEHOLDER_SUMMARIZED
from recap.demo.report import turn_count

pytestmark = pytest.mark.unit


def test_the_placeholder_turn_is_counted_apart() -> None:
    window = [{"role": "assistant" if i % 2 == 0 else "user", "content": f"m{i}"}
              for i in range(15)]
    sent = [{"role": "user", "content": PLACEHOLDER_SUMMARIZED}, *window]
    assert turn_count(sent) == ("16 turns: the 15 active messages, opened by a placeholder "
                                "user turn (the Messages API starts with the user)")
    assert turn_count(window[1:]) == "14 turns"
