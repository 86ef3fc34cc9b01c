"""A setting the active policy ignores is refused, never silently dropped: under the
adaptive policy (the default) RECAP_TRIGGER_MESSAGES, RECAP_TRIGGER_TOKENS,
RECAP_BATCH_SIZE and RECAP_CONDENSE_TO at start-up, and the same keys as session
overrides (recap.configure_session, which PUT .../settings and recap configure
call); recap stats names the policy and its rule."""

from __future__ import annotations

import pytest

from recap.cli.stats import fold_rule
from recap.errors import ConfigError, InvalidInput
from recap.sessions.overrides import configure_session
from recap.settings import load_settings


@pytest.mark.unit
def test_an_ignored_setting_at_start_up_names_the_policy_and_the_way_out() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(trigger_messages=40)
    message = str(caught.value)
    assert "RECAP_TRIGGER_MESSAGES is not read by the adaptive policy" in message
    assert "RECAP_POLICY=threshold" in message
    assert load_settings(policy="threshold", trigger_messages=40).trigger_messages == 40
    assert load_settings().policy == "adaptive"  # the defaults themselves are fine


def test_an_ignored_session_override_is_refused_and_nothing_is_stored() -> None:
    with pytest.raises(InvalidInput, match=r"trigger_messages, batch_size are not read by "
                                           r"the adaptive policy \(policy=adaptive, the "
                                           r"default\), so setting them is refused"):
        configure_session("fit-1", {"trigger_messages": 6, "batch_size": 3}, create=True)
    with pytest.raises(InvalidInput, match="policy=threshold"):
        configure_session("fit-1", {"trigger_tokens": 60}, create=True)
    stored = configure_session("fit-1", {"policy": "threshold", "trigger_messages": 40},
                               create=True)
    assert stored == {"policy": "threshold", "trigger_messages": 40}
    assert configure_session("fit-1", {"keep_recent": 3}) == {**stored, "keep_recent": 3}
    assert configure_session("fit-1", {"keep_recent": 3}, replace=True) == {"keep_recent": 3}


def test_recap_configure_refuses_it(capsys: pytest.CaptureFixture[str]) -> None:
    from recap.cli import main

    assert main(["configure", "fit-2", "trigger_messages=40", "--create"]) == 1
    assert "not read by the adaptive policy" in capsys.readouterr().err


@pytest.mark.unit
def test_stats_names_the_rule_that_decides_the_next_fold() -> None:
    adaptive = fold_rule("adaptive", trigger_messages=30, trigger_tokens=15000, batch_size=20,
                         keep_recent=10)
    assert "high-water mark" in adaptive and "RECAP_TRIGGER_MESSAGES" in adaptive
    fixed = fold_rule("threshold", trigger_messages=30, trigger_tokens=15000, batch_size=20,
                      keep_recent=10)
    assert "more than 30 active messages" in fixed and "15000 tokens" in fixed
