"""The memories block's size follows the session's policy: its own override, else
the deployment's RECAP_POLICY."""

from __future__ import annotations

import pytest

from recap.api.window import Window, memories_budget
from recap.settings import load_settings

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("deployment", "session", "expected"), [
    ("threshold", None, 2000),       # the fixed block, whatever the summary
    ("adaptive", None, 8000),        # eight times a 1,000-token summary, at most 4x 2,000
    ("threshold", "adaptive", 8000),  # a session that tries the adaptive policy
    ("adaptive", "threshold", 2000),
])
def test_memories_budget_follows_the_session_policy(deployment: str, session: str | None,
                                                    expected: int) -> None:
    window = Window("summary", 1000, [], 32000, ("s",), policy=session)
    assert memories_budget(window, settings=load_settings(policy=deployment)) == expected
