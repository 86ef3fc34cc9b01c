from __future__ import annotations

import os

import pytest

from worker.core.policy import Thresholds
from worker.errors import ConfigError, InvalidInput
from worker.jobs.resources import build_resources, reset_process_state
from worker.llm.summarizer import OFFLINE_MODEL
from worker.settings import (
    DEFAULT_MODEL,
    effective,
    env_name,
    get_settings,
    load_settings,
    validate_overrides,
)


def test_defaults_match_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("RECAP_")]:
        monkeypatch.delenv(name)  # the test environment's own values, too
    s = load_settings()
    assert (s.trigger_messages, s.trigger_tokens, s.batch_size, s.keep_recent,
            s.max_summary_tokens, s.context_budget_tokens, s.llm_timeout_s) == (
        30, 15000, 20, 10, 1024, 32000, 30.0)
    assert (s.max_retries, s.task_time_limit_s, s.lease_s) == (5, 300, 360)
    assert s.model == DEFAULT_MODEL


def test_default_model_is_in_the_installed_sdk_model_list() -> None:
    import typing

    from anthropic.types import Model

    literal = next(a for a in typing.get_args(Model) if typing.get_origin(a) is typing.Literal)
    assert DEFAULT_MODEL in typing.get_args(literal)
    assert "haiku" in DEFAULT_MODEL


@pytest.mark.parametrize(("var", "value"), [
    ("RECAP_TRIGGER_MESSAGES", "abc"),
    ("RECAP_BATCH_SIZE", "0"),
    ("RECAP_LLM_TIMEOUT_S", "-1"),
    ("RECAP_ENV", "staging"),
    ("RECAP_CONTEXT_BUDGET_TOKENS", "10"),
])
def test_bad_values_name_the_variable(monkeypatch: pytest.MonkeyPatch, var: str,
                                      value: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError, match=var):
        load_settings()


def test_visibility_timeout_must_outlive_time_limit_and_retry_delay(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECAP_VISIBILITY_TIMEOUT_S", "20")
    with pytest.raises(ConfigError, match="RECAP_VISIBILITY_TIMEOUT_S"):
        load_settings()


def test_lease_must_outlive_hard_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECAP_LEASE_S", "10")
    with pytest.raises(ConfigError, match="RECAP_LEASE_S"):
        load_settings()


def test_production_refuses_embedded_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECAP_ENV", "production")
    monkeypatch.delenv("DATABASE_URL")
    with pytest.raises(ConfigError, match="DATABASE_URL"):
        load_settings()


def test_api_key_never_echoed_in_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-SECRET-123")
    monkeypatch.setenv("RECAP_BATCH_SIZE", "nope")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "SECRET" not in str(info.value)
    monkeypatch.setenv("RECAP_BATCH_SIZE", "5")
    assert "SECRET" not in repr(load_settings())


def test_offline_summarizer_refused_in_production(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("RECAP_ENV", "production")
    # Without a key Claude is still the choice: the offline stand-in is never a fallback.
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set.*RECAP_SUMMARIZER"):
        build_resources(load_settings())
    monkeypatch.setenv("RECAP_SUMMARIZER", "offline")
    with pytest.raises(ConfigError, match="RECAP_ALLOW_OFFLINE_SUMMARIZER"):
        build_resources(load_settings())
    monkeypatch.setenv("RECAP_ALLOW_OFFLINE_SUMMARIZER", "true")
    res = build_resources(load_settings())
    assert res.summarizer.model == OFFLINE_MODEL
    assert res.client is None  # offline: no SDK client, no network


def test_process_settings_are_cached_until_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    first = get_settings()
    monkeypatch.setenv("RECAP_BATCH_SIZE", "7")
    assert get_settings() is first  # read once per process
    reset_process_state()
    try:
        assert get_settings().batch_size == 7
    finally:
        monkeypatch.undo()
        reset_process_state()
    assert get_settings().batch_size == first.batch_size


def test_thresholds_come_from_the_settings() -> None:
    s = load_settings(trigger_messages=12, trigger_tokens=345, batch_size=6, keep_recent=3,
                      context_budget_tokens=5000)
    assert s.thresholds() == Thresholds(trigger_messages=12, trigger_tokens=345, batch_size=6,
                                        keep_recent=3, context_budget_tokens=5000,
                                        max_batch_tokens=s.job_token_budget())


def test_session_overrides_apply_on_top_and_name_bad_keys() -> None:
    base = load_settings()
    tuned = effective(base, {"batch_size": 3, "model": "claude-other"})
    assert (tuned.batch_size, tuned.model, tuned.keep_recent) == (3, "claude-other",
                                                                  base.keep_recent)
    assert effective(base, None) is base
    with pytest.raises(InvalidInput, match="unknown session setting.*colour"):
        validate_overrides({"colour": "blue"}, base=base)
    with pytest.raises(InvalidInput, match="batch_size"):
        validate_overrides({"batch_size": 0}, base=base)


def test_env_names() -> None:
    assert env_name("database_url") == "DATABASE_URL"
    assert env_name("anthropic_api_key") == "ANTHROPIC_API_KEY"
    assert env_name("batch_size") == "RECAP_BATCH_SIZE"
